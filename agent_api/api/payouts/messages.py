"""The messages and error codes of the payout-run and payout routes, word for word (the codes are stable and
documented in docs/agent-api.md); the rest of the agent API's are in agent_api.messages."""

RUN_NOT_FOUND = "Payout run not found"
PAYOUT_NOT_FOUND = "Payout not found"
RUN_PROGRAM_ID_INVALID = "program_id is required: the id of a program this key may see"
RUN_CURRENCY_INVALID = "currency is required: one of {known}"
RUN_CURRENCY_FILTER_INVALID = "currency must be one of: {known}"
RUN_MINIMUM_INVALID = "minimum_cents must be a whole number, 0 or more, in the currency's minor units"
RUN_STATUS_INVALID = "status must be one of: preview, confirmed"
RUN_ID_FILTER_INVALID = "run_id must be a positive whole number"
PAYOUT_STATUS_INVALID = "status must be one of: pending, processing, paid, failed, cancelled"
REFERENCE_INVALID = "reference must be a string of at most 255 characters"
FAILURE_MESSAGE_INVALID = "message is required: a non-empty string of at most 500 characters (the partner reads it)"
FAILURE_CODE_INVALID = "code must be a string of at most 100 characters"
RUN_CONFIRMED = "Payout run #{run_id} is already confirmed"
PAYOUT_NOT_OPEN = "Only an open payout (pending or processing) can be marked; this one is {status}"
PAYOUT_STRIPE_BY_HAND = (
    "A Stripe payout is settled by its transfer (Stripe's answer and events), never marked by hand; only PayPal "
    "and Wise payouts are"
)

CODE_RUN_CONFIRMED = "payout_run_confirmed"
CODE_PAYOUT_STATE = "payout_state"
CODE_PAYOUT_RAIL = "payout_rail"
