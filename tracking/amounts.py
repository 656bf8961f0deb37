"""The ceiling on every amount the service accepts: a sale's amount_cents and tax_cents, a refund's
refund_amount_cents (API, test mode and Stripe events alike).

10^12 minor units is 10 billion in major units (USD 10,000,000,000.00), far above any single payment. It keeps
every later sum inside PostgreSQL's bigint (9.2 x 10^18): a partner's revenue and commission totals, a program's
metrics and a page of summed amounts stay exact for up to 9.2 million sales at the ceiling each, which at the sale
route's 120 calls a minute is more than fifty days of nothing but maximal sales. Without a ceiling one call with
2^63 - 1 stored a commission of 9.2 x 10^17 and overflowed the partner metrics."""

MAX_AMOUNT_CENTS = 10**12
