"""Every message of the agent API (/api/agent/v1/), word for word. The spec leaves them open; the codes beside
them (error.code) are stable and documented in docs/agent-api.md."""

KEY_REQUIRED = "Agent API key required: send Authorization: Bearer agt_…"
KEY_INVALID = "Invalid agent API key"
KEY_REVOKED = "This agent API key has been revoked"
KEY_EXPIRED = "This agent API key expired at {expired_at}"
KEY_UNBOUND = "This agent API key belongs to no workspace; ask the operator for a new one"
PROGRAM_KEY_REFUSED = "A program key does not authenticate the agent API; use an agent key (agt_…)"
LOGIN_TOKEN_REFUSED = "A CLI login token does not authenticate the agent API; use an agent key (agt_…)"
SCOPE_MISSING = "This agent API key lacks the {scope} scope"
PROGRAM_NOT_FOUND = "Program not found"
AGENT_FAILED = "The agent API failed to answer; retry later"
LIMIT_MAX = 100
CURSOR_INVALID = "cursor is not one this API returned"
LIMIT_INVALID = f"limit must be a whole number from 1 to {LIMIT_MAX}"

CODE_KEY_REQUIRED = "missing_api_key"
CODE_KEY_INVALID = "invalid_api_key"
CODE_KEY_REVOKED = "api_key_revoked"
CODE_KEY_EXPIRED = "api_key_expired"
CODE_WRONG_CREDENTIAL = "wrong_credential"
CODE_SCOPE_MISSING = "missing_scope"
CODE_NOT_FOUND = "not_found"
CODE_BAD_REQUEST = "invalid_request"
CODE_INTERNAL = "internal_error"

# Writes: the Idempotency-Key header.
IDEMPOTENCY_KEY_INVALID = "Idempotency-Key must be 1 to 255 printable ASCII characters"
IDEMPOTENCY_CONFLICT = "This Idempotency-Key was already used with a different request"
CODE_IDEMPOTENCY_CONFLICT = "idempotency_conflict"

# GET /api/agent/v1/events
EVENT_TYPE_INVALID = "type is required: one of click, lead, sale"
EVENT_PROGRAM_ID_INVALID = "program_id must be a positive integer"
EVENT_PARTNER_ID_INVALID = "partner_id must be a positive integer"
EVENT_SINCE_INVALID = "since must be an ISO 8601 date or date-time"
EVENT_UNTIL_INVALID = "until must be an ISO 8601 date or date-time"
EVENT_RANGE_INVALID = "since must not be after until"
EVENT_TEST_INVALID = "test must be true or false"

# Commissions and payouts (read routes).
COMMISSION_NOT_FOUND = "Commission not found"
APPLICATION_NOT_FOUND = "Application not found"
APPLICATION_DECIDED = "The application is {status} already"
COMMISSION_STATUS_INVALID = "status must be one of: pending, approved, paid, refunded, reversed"
WITHDRAWAL_STATUS_INVALID = "status must be one of: open, paid, cancelled"
PROGRAM_ID_FILTER_INVALID = "program_id must be a positive whole number"
PARTNER_ID_FILTER_INVALID = "partner_id must be a positive whole number"
CREATED_SINCE_INVALID = "created_since must be an ISO 8601 date or date-time"
CREATED_UNTIL_INVALID = "created_until must be an ISO 8601 date or date-time"

# Partners and enrolments.
TEXT_INVALID = "{field} must be a non-empty string of at most {limit} characters"
EMAIL_INVALID = "email must be a valid email address"
PROGRAM_ID_INVALID = "program_id must be the id of a program this key may see"
PARTNER_NOT_FOUND = "Partner not found"
PARTNER_PATCH_EMPTY = "Send name or email to change"
LIMITED_KEY_NEEDS_PROGRAM = "A key limited to programs must enroll the new partner in one: send program_id"

# Referral links.
LINK_NOT_FOUND = "Link not found"
LINK_ACTIVE_INVALID = "active must be true or false"
LINK_PARTNER_ID_INVALID = "partner_id must be the id of a partner of this key's workspace"
LINK_SHORT_LINK_INVALID = "short_link must be 1 to 100 characters of A-Z, a-z, 0-9, _ or -"
LINK_PARTNER_NOT_ENROLLED = (
    "The partner is not enrolled in this program; enroll it first with POST /api/agent/v1/partners/{partner_id}/"
    "enrollments"
)
LINK_SHORT_LINK_TAKEN = "This short_link is already taken; choose another or leave it out to get one generated"
CODE_SHORT_LINK_TAKEN = "short_link_taken"

# Commission actions and paying a withdrawal (writes).
BODY_NOT_OBJECT = "Request body must be a JSON object"
VOID_REASON_INVALID = "reason is required: a non-empty string of at most 500 characters"
HOLD_REASON_INVALID = "reason must be a string of at most 500 characters"
HELD_FILTER_INVALID = "held must be true or false"
RULE_FILTER_INVALID = "{field} must be one of: {known}"
CODE_COMMISSION_STATE = "commission_state"
CODE_APPLICATION_DECIDED = "application_decided"
WITHDRAWAL_NOT_FOUND = "Withdrawal not found"
WITHDRAWAL_NOT_OPEN = "Only an open withdrawal can be marked paid; this one is {status}"
CODE_WITHDRAWAL_STATE = "withdrawal_state"

# Outbound webhooks: endpoints, their deliveries and attempts, and the events sent (webhooks:read / webhooks:write).
# What the webhooks services refuse is said in webhooks.messages.
WEBHOOK_ENDPOINT_NOT_FOUND = "Webhook endpoint not found"
WEBHOOK_DELIVERY_NOT_FOUND = "Webhook delivery not found"
WEBHOOK_DELIVERY_STATUS_INVALID = "status must be one of: pending, succeeded, failed"
WEBHOOK_EVENT_TYPE_FILTER_INVALID = "{field} must be one of: {known}"
WEBHOOK_URL_REQUIRED = "url is required: an http or https URL of at most 2000 characters"
WEBHOOK_FLAG_INVALID = "{field} must be true or false"
WEBHOOK_DESCRIPTION_INVALID = "description must be a string of at most 200 characters"
WEBHOOK_PATCH_EMPTY = "Send url, event_types, enabled, include_test_events or description to change"
WEBHOOK_LIMITED_KEY_NEEDS_PROGRAM = (
    "A key limited to programs manages only their endpoints: send program_id (a workspace-wide endpoint receives "
    "the events of every program)"
)
WEBHOOK_SINCE_INVALID = "since is required: an ISO 8601 date or date-time"
WEBHOOK_UNTIL_INVALID = "until is required: an ISO 8601 date or date-time"
CODE_WEBHOOK_ENDPOINT_DISABLED = "webhook_endpoint_disabled"

# Fraud rules of a program (programs:read / programs:write) and its flagged clicks (events:read). What the rules
# refuse (a threshold out of range, a rule without a window) is said in core.messages (FRAUD_RULE_*).
FRAUD_RULE_NOT_FOUND = "No fraud rule named {rule}; the rules are: {known}"
FRAUD_RULE_UNKNOWN_FIELDS = "Unknown field(s): {fields}. Send enabled, action, threshold or window_minutes"
FRAUD_RULE_PATCH_EMPTY = "Send enabled, action, threshold or window_minutes to change"
FRAUD_RULE_ENABLED_INVALID = "enabled must be true or false"
FRAUD_RULE_NUMBER_INVALID = "{field} must be a whole number"
FLAGGED_KIND_INVALID = "kind must be one of: {known}"

# Groups of a program, their tier rules and bonuses, partner moves and coupon codes (groups:read / groups:write).
# What the groups services refuse is said in groups.messages and groups.services (a 400 here keeps the service's
# reason in details.reason).
GROUP_NOT_FOUND = "Group not found"
TIER_RULE_NOT_FOUND = "Tier rule not found"
BONUS_NOT_FOUND = "Bonus not found"
COUPON_CODE_NOT_FOUND = "Coupon code not found"
GROUP_UNKNOWN_FIELDS = "Unknown field(s): {fields}. Send {known}"
GROUP_PATCH_EMPTY = "Send {known} to change"
GROUP_NAME_INVALID = "name must be a non-empty string of at most 100 characters"
GROUP_COMMISSION_TYPE_INVALID = "commission_type must be one of: percent, fixed, recurring_percent, recurring_fixed"
GROUP_RATE_INVALID = "commission_rate must be a positive number of at most 9999999999.9999"
GROUP_RATE_OVER_100 = "commission_rate must be at most 100 for a percent commission"
GROUP_WHOLE_NUMBER_INVALID = "{field} must be a whole number from {low} to {high}"
GROUP_FLAG_INVALID = "{field} must be true or false"
GROUP_CHOICE_INVALID = "{field} must be one of: {known}"
GROUP_DISCOUNT_PERCENT_INVALID = "discount_percent must be a number above 0 and at most 100 (two decimals)"
GROUP_DISCOUNT_PERCENT_REQUIRED = "A percent discount needs discount_percent (above 0, at most 100)"
GROUP_DISCOUNT_AMOUNT_REQUIRED = "An amount discount needs discount_amount_cents (at least 1)"
GROUP_DISCOUNT_MONTHS_REQUIRED = "A repeating discount needs discount_duration_months (at least 1)"
GROUP_QUESTIONS_INVALID = (
    'application_questions must be a list of at most {limit} objects {{"label": text of 1 to 200 characters, '
    '"required": true or false}}'
)
GROUP_ID_INVALID = "group_id must be the id of a group of this program"
TIER_TARGET_INVALID = "target_group_id must be the id of another group of this program"
TIER_PATCH_EMPTY = "Send is_active to change"
BONUS_NAME_INVALID = "name must be a non-empty string of at most 100 characters"
BONUS_PAID = (
    'This bonus has been paid {count} time(s): it stays with its awards. Stop it with PATCH {{"is_active": false}}'
)
CODE_BONUS_PAID = "bonus_paid"
GROUP_PARTNER_NOT_ENROLLED = (
    "The partner is not enrolled in this program; enroll it first with POST /api/agent/v1/partners/{partner_id}/"
    "enrollments"
)
COUPON_CODE_INVALID = "code must be 1 to 100 letters, digits, - or _"
COUPON_CODE_PARTNER_ID_INVALID = "partner_id must be the id of a partner of this key's workspace"
COUPON_ACTIVE_INVALID = "active must be true or false"
