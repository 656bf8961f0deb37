"""Sources built in code for the engine's tests (the platform readers' tests read real export files)."""

from datetime import UTC, datetime, timedelta

from imports.records import CommissionRow, LinkRow, PartnerRow, ReferralRow, Refusal, Source

T0 = datetime(2025, 1, 10, 12, 0, tzinfo=UTC)


def small_source(*, partners: int = 3, platform: str = "fake") -> Source:
    """`partners` partners, one link each, two referrals each (a lead and a paying customer), and per partner four
    commissions: pending, approved (USD), paid, void; plus an approved EUR one for the first partner."""
    rows_p, rows_l, rows_r, rows_c = [], [], [], []
    line = 1
    for n in range(1, partners + 1):
        line += 1
        rows_p.append(
            PartnerRow(
                where=f"partners.csv line {line}",
                source_id=f"p{n}",
                email=f"Partner{n}@Example.com",
                name=f"Partner {n}",
                payout_email=f"pay{n}@example.com",
                payout_rail="paypal",
                created_at=T0,
            )
        )
        rows_l.append(
            LinkRow(where=f"links.csv line {line}", source_id=f"l{n}", partner_source_id=f"p{n}", code=f"old{n}")
        )
        for r, status in ((1, "lead"), (2, "customer")):
            rows_r.append(
                ReferralRow(
                    where=f"referrals.csv line {2 * n + r}",
                    source_id=f"r{n}-{r}",
                    partner_source_id=f"p{n}",
                    email=f"buyer{n}-{r}@example.com",
                    processor_customer_id=f"cus_{n}_{r}" if status == "customer" else "",
                    status=status,
                    link_code=f"old{n}",
                    created_at=T0 + timedelta(days=1),
                )
            )
        for c, status in enumerate(("pending", "approved", "paid", "void"), start=1):
            rows_c.append(
                CommissionRow(
                    where=f"commissions.csv line {4 * n + c}",
                    source_id=f"c{n}-{c}",
                    partner_source_id=f"p{n}",
                    referral_source_id=f"r{n}-2",
                    sale_source_id=f"s{n}-{c}",
                    sale_amount_minor=10000 * c,
                    commission_amount_minor=1000 * c + n,
                    currency="USD",
                    status=status,
                    created_at=T0 + timedelta(days=2 + c),
                )
            )
    rows_c.append(
        CommissionRow(
            where="commissions.csv line 999",
            source_id="c-eur",
            partner_source_id="p1",
            sale_amount_minor=5000,
            commission_amount_minor=777,
            currency="EUR",
            status="approved",
            created_at=T0,
        )
    )
    return Source(
        platform=platform,
        partners=rows_p,
        links=rows_l,
        referrals=rows_r,
        commissions=rows_c,
        refusals=[Refusal(where="partners.csv line 99", kind="partner", reason="email is missing")],
    )


def approved_unpaid(source: Source) -> dict[tuple[str, str], int]:
    """What the source says each partner is owed: approved, not paid, per partner source id and currency."""
    owed: dict[tuple[str, str], int] = {}
    for row in source.commissions:
        if row.status == "approved":
            key = (row.partner_source_id, row.currency)
            owed[key] = owed.get(key, 0) + row.commission_amount_minor
    return owed
