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
