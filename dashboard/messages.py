"""What the dashboard's webhooks pages say (flashes and form errors of their own); refusals of the webhooks
services come from webhooks.messages."""

ENDPOINT_CREATED = "Webhook endpoint created. Copy its signing secret now: it will not be shown again."
ENDPOINT_UPDATED = "Webhook endpoint saved."
ENDPOINT_DELETED = "Webhook endpoint {url} deleted, with its delivery log."
SECRET_ROTATED = (
    "New signing secret made. Copy it now: it will not be shown again. The previous secret keeps signing "
    "(a second signature) until {until} UTC ({hours} hours), so your receiver can switch without missing a delivery."
)
DELIVERY_RESENT = "Delivery of {event_id} queued to be sent again now."
DELIVERY_ALREADY_PENDING = "Delivery of {event_id} is already pending: its next attempt is scheduled."
FAILED_RESENT = "Failed deliveries queued to be sent again: {count} (events from {since} to {until} UTC)."
FAILED_NONE = "No failed deliveries from {since} to {until} UTC: nothing was resent."
PERIOD_UNREADABLE = "Enter since and until as date and time (YYYY-MM-DD HH:MM, UTC)."

# The review tab (held commissions, flagged clicks, fraud rules).
COMMISSION_RELEASED_CREDITED = "Commission #{id} released: approved and credited to {partner}."
COMMISSION_RELEASED_PENDING = (
    "Commission #{id} released: it is approved and credited when its hold period ends ({hold_until} UTC)."
)
COMMISSION_RELEASED = "Commission #{id} released from hold."
COMMISSION_VOIDED = "Commission #{id} voided: it pays nothing."
COMMISSION_NOT_HELD_ANY_MORE = "Commission #{id} is no longer on hold: nothing was changed."
VOID_REASON_REQUIRED = "Give a reason to void the commission."
REASON_TOO_LONG = "The reason must be at most {limit} characters."
RULE_THRESHOLD_REQUIRED = "Enter a threshold."
RULE_WINDOW_REQUIRED = "Enter a window in minutes."
RULE_NUMBER_INVALID = "Enter a whole number."
RULE_ACTION_INVALID = "Choose flag or hold."
RULES_SAVED = "Fraud rules saved: {rules}. They apply to new clicks and sales; nothing recorded is judged again."
RULES_UNCHANGED = "Nothing changed: the rules are as they were."
RULES_NOT_SAVED = "The rules were not saved: correct the errors below."
RULE_RESET = "{rule} runs on its defaults again."
