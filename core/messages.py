"""Every message the spec fixes, word for word. Code and tests import them from here."""

# Authentication
MISSING_AUTH_HEADER = "Missing or malformed Authorization header. Expected: Bearer <token>"
MISSING_API_TOKEN = "Missing API token"
INVALID_API_TOKEN = "Invalid API token"
KEY_ROTATION_REQUIRED = "This API key was retired on {deadline}. Generate a new key to continue."
KEY_ROTATION_WARNING = "This API key must be rotated before {deadline}."
KEY_ROTATION_HINT = "Regenerate the program API key in the dashboard and update your integration."
PROGRAM_ID_MISMATCH = "program_id does not match the API key"

# Click
AFFILIATE_URL_REQUIRED = "affiliate_url is required"
INVALID_AFFILIATE_URL = "Invalid affiliate_url"
NO_AFF_PARAMETER = "No aff parameter found in affiliate_url"
UNKNOWN_PROGRAM_ID = "Unknown program_id"
REFERRAL_LINK_NOT_FOUND = "Referral link not found"
INVALID_LINK_CONFIGURATION = "Invalid referral link configuration"
LINK_DISABLED = "This referral link is disabled"
LINK_DISABLED_HINT = "The link's owner turned it off. Clicks are recorded again once it is turned back on."
CLICK_TRACKING_FAILED = "Click tracking failed"
CLICK_TEST_RECORDED = "Test click recorded"

# Lead
LEAD_ID_REQUIRED = "click_id or customer_key is required"
LEAD_CLICK_ID_REQUIRED_BROWSER = "click_id is required when no API key is sent"
LEAD_CUSTOMER_NOT_FOUND = "Customer not found. Provide a valid click_id or customer_key."
LEAD_CUSTOMER_OTHER_PROGRAM = "Customer does not belong to this program"
LEAD_STATUS_CONFLICT = "Customer status cannot be updated to lead. Current status: {status}"
LEAD_TRACKING_FAILED = "Lead tracking failed"
LEAD_TEST_RECORDED = "Test lead recorded"

# Sale
SALE_TRANSACTION_ID_REQUIRED = "transaction_id is required and must be a string"
SALE_AMOUNT_REQUIRED = "amount_cents is required and must be a positive integer"
SALE_OCCURRED_AT_INVALID = "occurred_at must be an ISO 8601 time within the last 30 days"
SALE_PROVIDER_INVALID = "provider must be one of the listed values"
SALE_PROVIDER_PAYMENT_ID_INVALID = "provider_payment_id must be a string of 1 to 255 characters"
SALE_LIVEMODE_INVALID = "livemode must be a boolean"
SALE_CUSTOMER_NOT_FOUND = "Customer not found. Provide customer_key or click_id."
SALE_NO_ATTRIBUTION = "No affiliate attribution found for this customer in this program"
SALE_NO_PARTNER_PROGRAM = "No partner-program relationship found for this customer"
SALE_PARTNER_REQUIRED = "partnerId required to create commission"
SALE_DUPLICATE = "Duplicate transaction_id. This sale has already been recorded."
SALE_UNSUPPORTED_CURRENCY = "currency {currency} is not supported"
SALE_TRACKING_FAILED = "Sale tracking failed"
SALE_COMMISSION_FAILED = "Failed to create commission"
SALE_RECORDED = "Sale recorded and commission created"
SALE_TEST_RECORDED = "Test sale recorded"

# Refund
REFUND_TRANSACTION_ID_REQUIRED = "transaction_id is required"
REFUND_REASON_INVALID = "reason must be refund or chargeback"
REFUND_SALE_NOT_FOUND = "Sale not found for transaction_id"
REFUND_TRACKING_FAILED = "Refund tracking failed"
REFUND_NO_COMMISSION = "This sale has no commission to reverse"

# Tracker routes (visit, config)
PROGRAM_ID_REQUIRED = "program_id is required"
VISIT_TRACKING_FAILED = "Visit tracking failed"
TRACKER_CONFIG_FAILED = "Failed to load tracker config"
TRACKER_DISCOUNT_FAILED = "Failed to load the discount"  # an extension's (GET /api/v1/track/discount)

# Readiness
READINESS_FAILED = "Failed to compute readiness. Retry shortly."
NO_ACTIVE_LINK = "No active referral link with a partner"

# Verification (svc test-event, Run verification)
VERIFICATION_EVENT_TYPE_INVALID = "event_type must be one of click, lead, sale"
NO_TEST_KEY = "The program has no test key"
VERIFICATION_NO_TEST_KEY = f"{NO_TEST_KEY}. Regenerate it in the dashboard."
VERIFICATION_NO_LINK = f"{NO_ACTIVE_LINK}. Create a partner and a referral link first."

# Dashboard API
PROGRAM_NOT_FOUND = "Program not found"
PROGRAM_ID_NOT_INTEGER = "program_id must be an integer"
BODY_NOT_OBJECT = "Request body must be a JSON object"
CLICK_SOURCES_FAILED = "Failed to load click sources"
SETTINGS_UPDATE_FAILED = "Failed to update program settings"

# Stripe Connect (shown on the dashboard page the user returns to)
STRIPE_CONNECT_NOT_CONFIGURED = "Stripe Connect is not configured on this server (STRIPE_CLIENT_ID, STRIPE_SECRET_KEY)."
STRIPE_CONNECT_ACCOUNT_TAKEN = (
    "This Stripe account is already connected to program #{program_id}. Disconnect it there first."
)
STRIPE_CONNECT_EXPIRED = "The Stripe connection took too long. Start again."
STRIPE_CONNECT_FOREIGN_STATE = "This Stripe answer does not come from a connection you started."
STRIPE_CONNECT_OTHER_USER = "This Stripe connection was started by another user."
STRIPE_CONNECT_PROGRAM_GONE = "The program no longer exists."
STRIPE_CONNECT_REFUSED = "Stripe refused the connection: {reason}"

# Rate limiting
RATE_LIMITED = "Too many requests. Retry after {seconds} seconds."

# Generic
NOT_FOUND = "Not found"
METHOD_NOT_ALLOWED = 'Method "{method}" not allowed.'
MALFORMED_JSON = "Request body must be valid JSON"
CONTENT_TYPE_NOT_JSON = "Content-Type must be application/json"
INTERNAL_ERROR = "Internal server error"
PERMISSION_DENIED = "You do not have permission to perform this action."
AUTHENTICATION_REQUIRED = "Authentication required"
# An attributed sale stored without a commission (200, commission_id null): one message per reason.
SALE_RECORDED_RENEWAL_NOT_PAID = (
    "Sale recorded without a commission: this is a renewal (is_recurring: true), and only recurring_percent "
    "and recurring_fixed commissions pay renewals"
)
SALE_RECORDED_RECURRING_ENDED = (
    "Sale recorded without a commission: the recurring commission period ({months} months from the "
    "customer's first commissioned sale) has ended"
)

# Program settings (CLI init, settings route)
PROGRAM_MISSING_FIELDS = "Missing required fields: name, domain, commission_type, commission_rate"
PROGRAM_INVALID_COMMISSION_TYPE = (
    "Invalid commission_type: {value}. Valid: percent, fixed, recurring_percent, recurring_fixed"
)
PROGRAM_RATE_NOT_POSITIVE = "commission_rate must be a positive number"
PROGRAM_RATE_OVER_100 = "commission_rate is a percentage for this type and cannot exceed 100"
PROGRAM_DURATION_INVALID = "duration_months must be a whole number of months (0 = lifetime)"
PROGRAM_COOKIE_INVALID = "cookie_duration must be a whole number of days from 1 to 365"
PROGRAM_TEXT_INVALID = "{field} must be a non-empty string of at most {limit} characters"

# Bad input refused before it reaches a service (core/api/parsers.py, core/middleware.py)
JSON_TOO_DEEP = "Request body must not nest objects and arrays more than {depth} levels deep"
JSON_NOT_FINITE = "Request body numbers must be finite: NaN, Infinity and out-of-range numbers are not JSON"
JSON_DUPLICATE_KEY = "Request body must not repeat a key in one object: {key}"
TEXT_NOT_STORABLE = "{field} must not contain NUL characters or unpaired surrogates"
QUERY_NOT_STORABLE = "Query parameter {name} must not contain NUL characters"
HEADER_NOT_STORABLE = "Header {name} must not contain NUL characters"
PAYLOAD_TOO_LARGE = "Request body must be at most {limit} bytes"
BODY_UNREADABLE = "Request body could not be read: malformed chunked encoding or a broken connection"
URI_TOO_LONG = "Request URL must be at most {limit} bytes"
HEADERS_TOO_LARGE = (
    "Request headers must be at most {fields} fields, {field_bytes} bytes each and {total_bytes} bytes in all"
)

# Owner actions on a commission (agent API): hold, release, void, approve early.
COMMISSION_HOLD_NOT_PENDING = "Only a pending commission can be held; this one is {status}"
COMMISSION_NOT_HELD = "This commission is not on hold"
COMMISSION_VOID_PAID = "A paid commission cannot be voided; refund its sale instead"
COMMISSION_VOID_REVERSED = "This commission is already reversed"
COMMISSION_APPROVE_NOT_PENDING = "Only a pending commission that is not on hold can be approved; this one is {status}"

# Fraud rules (fraud.config): agent API and dashboard settings.
FRAUD_RULE_UNKNOWN = "Unknown rule: {rule}"
FRAUD_RULE_ACTION_INVALID = "action must be flag or hold"
FRAUD_RULE_NO_THRESHOLD = "The {rule} rule has no threshold"
FRAUD_RULE_NO_WINDOW = "The {rule} rule has no window"
FRAUD_RULE_THRESHOLD_RANGE = "threshold must be between {low} and {high}"
FRAUD_RULE_WINDOW_RANGE = "window_minutes must be between {low} and {high}"

# Integrity checks (core.integrity; docs/integrity.md)
INTEGRITY_UNKNOWN_CHECKS = "Unknown integrity check(s): {checks}"
INTEGRITY_TITLE = "Integrity"
INTEGRITY_PASSED = "Last integrity check {when}: every invariant held ({checks} checks)"
INTEGRITY_FAILED = (
    "Last integrity check {when}: {failed} of {checks} invariants did not hold for this program's records: {listed}"
)
INTEGRITY_FAILED_STEP = (
    "Ask the service's operator to run manage.py verify_integrity: it names each row that breaks an invariant "
    "(docs/integrity.md)."
)
INTEGRITY_STALE = "Last integrity check {when}: no check has run for over two days"
INTEGRITY_STALE_STEP = "Check that Celery beat runs: it checks integrity daily (core.verify_integrity)."
