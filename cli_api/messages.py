"""Every message of the command-line helper API, word for word (the spec's CLI errors table, then ours)."""

# auth/start
AUTH_START_FAILED = "Failed to start auth session"

# auth/callback
CALLBACK_MISSING_FIELDS = "Missing required fields: state, id_token"
CALLBACK_SESSION_NOT_FOUND = "Session not found or already used"
CALLBACK_SESSION_EXPIRED = "Session expired"
ACCOUNT_SUSPENDED = "Your account has been suspended."
PROVIDER_EMAIL_NOT_VERIFIED = (
    "Your email address is not verified with your sign-in provider. Verify it there, then try again."
)
CALLBACK_FAILED = "Auth callback failed"
# Not in the spec's table: an id_token that fails verification, or names nobody we know.
CALLBACK_INVALID_ID_TOKEN = "Invalid or expired id_token"
CALLBACK_NO_ACCOUNT = "No account matches this sign-in"

# auth/poll
POLL_MISSING_STATE = "Missing state parameter"
POLL_SESSION_NOT_FOUND = "Session not found"
POLL_SESSION_CONSUMED = "Session already consumed"
POLL_FAILED = "Failed to poll auth session"

# Login token on init (and logout)
INIT_AUTH_REQUIRED = "Authentication required"
INIT_INVALID_TOKEN = "Invalid or expired token"
USER_NOT_FOUND = "User not found"
# Login token on programs: the spec gives these with a final period.
PROGRAMS_MISSING_HEADER = "Missing Authorization header."
PROGRAMS_INVALID_TOKEN = "Invalid or expired token."

# init
NO_ADVERTISER = "No advertiser found for this account"
ADVERTISER_MISMATCH = "advertiser_id does not match the authenticated account"
INIT_FAILED = "Failed to create program"

# programs
PROGRAMS_FAILED = "Failed to list programs"

# auth/logout, status, test-event (500 messages the spec leaves open)
LOGOUT_FAILED = "Failed to log out"
STATUS_FAILED = "Failed to get program status"
TEST_EVENT_FAILED = "Failed to run test event"
TEST_EVENT_CAPPED = "Test event limit reached: {limit} runs per program per hour. Retry after {seconds} seconds."

# details.code values
ACCOUNT_BLOCKED_CODE = "ACCOUNT_BLOCKED"
PROVIDER_EMAIL_NOT_VERIFIED_CODE = "PROVIDER_EMAIL_NOT_VERIFIED"

# The browser confirmation page (GET/POST /cli/login)
LOGIN_LINK_INVALID = "This sign-in link is not valid or was already used. Run svc login again."
LOGIN_LINK_EXPIRED = "This sign-in link has expired. Run svc login again."

# logs, explain (program key; the request log and attribution explained)
LOGS_FAILED = "Failed to get the request log"
EXPLAIN_FAILED = "Failed to explain the attribution"

# webhook-events, webhook-events/trigger (login token; svc listen and svc trigger)
WEBHOOK_EVENTS_FAILED = "Failed to list webhook events"
WEBHOOK_TRIGGER_FAILED = "Failed to trigger the webhook event"
LISTEN_AFTER_INVALID = "after must be a whole number: the cursor of an event already seen, 0 for the oldest"
LISTEN_LIMIT_INVALID = "limit must be a whole number from 1 to 100"
TRIGGER_TYPE_REQUIRED = "type is required: an event type such as sale.created"
