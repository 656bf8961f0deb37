"""What the webhooks services say when they refuse, shared by the dashboard, the agent API and the tests."""

URL_INVALID = "url must be a valid http or https URL"
URL_CREDENTIALS = "url must not contain credentials"
URL_PRIVATE = "url resolves to {address}, a private, loopback or link-local address"
EVENT_TYPES_REQUIRED = 'event_types must list at least one event type, or "*" for all'
EVENT_TYPE_UNKNOWN = "Unknown event type: {type}"
PROGRAM_OTHER_WORKSPACE = "program_id must be a program of the endpoint's workspace"
RESEND_PERIOD_INVALID = "since must be before until"
ENDPOINT_DISABLED_NO_RESEND = "The endpoint is disabled: enable it before resending"
TRIGGER_TYPE_UNKNOWN = "Unknown event type: {type}. Known types: {known}"
