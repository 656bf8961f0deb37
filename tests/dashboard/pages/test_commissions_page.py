"""Commissions: newest first, paginated, with status, amount, refunded sale amount, clawed-back amount and the
refund reason."""

from datetime import timedelta

import pytest
from django.utils import timezone

from core.money import money
from dashboard.views import COMMISSIONS_PER_PAGE
from tests.factories import CommissionFactory, CustomerFactory, ReferralLinkFactory, SaleFactory

pytestmark = pytest.mark.django_db


def url(program) -> str:
    return f"/programs/{program.pk}/commissions"


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program)


def commission(link, *, age_days: int = 0, **fields):
    sale = SaleFactory(customer=CustomerFactory(link=link), amount_cents=fields.pop("sale_cents", 10000))
    created = timezone.now() - timedelta(days=age_days)
    return CommissionFactory(sale=sale, created_at=created, **fields)


def test_it_shows_each_commission_with_its_refund_facts(member_client, program, link):
    refunded = commission(
        link,
        status="refunded",
        credited=True,
        sale_refunded_cents=2500,
        deducted_cents=500,
        refund_reason="chargeback",
        age_days=1,
    )
    pending = commission(link, status="pending")

    page = member_client.get(url(program)).content.decode()

    assert page.index(f'id="commission-{pending.pk}"') < page.index(f'id="commission-{refunded.pk}"')  # newest first
    row = page[page.index(f'id="commission-{refunded.pk}"') :].split("</tr>")[0]
    assert "status-refunded" in row and ">refunded<" in row
    assert "20.00 USD" in row  # commission
    assert "100.00 USD" in row  # sale
    assert "25.00 USD" in row  # refunded part of the sale
    assert cells(row)[4:9] == ["20.00 USD", "15.00 USD", "100.00 USD", "25.00 USD", "5.00 USD"]
    assert "chargeback" in row
    assert link.partner.name in row
    pending_row = page[page.index(f'id="commission-{pending.pk}"') :].split("</tr>")[0]
    assert pending_row.count("–") == 2  # nothing refunded, nothing clawed back
    assert cells(pending_row)[4:6] == ["20.00 USD", "20.00 USD"]  # a pending commission still pays all of it


def cells(row: str) -> list[str]:
    """The text of each <td> of one table row."""
    return [cell.split(">", 1)[1].split("</td>")[0].strip() for cell in row.split("<td")[1:]]


def row_of(page: str, commission) -> list[str]:
    return cells(page[page.index(f'id="commission-{commission.pk}"') :].split("</tr>")[0])


def test_a_pending_commission_partly_refunded_pays_nothing_and_shows_no_clawback(member_client, program, link):
    cancelled = commission(link, status="refunded", credited=False, sale_refunded_cents=1000, deducted_cents=200)
    page = member_client.get(url(program)).content.decode()
    # commission, still pays, sale, refunded sale, clawed back
    assert row_of(page, cancelled)[4:9] == ["20.00 USD", "0.00 USD", "100.00 USD", "10.00 USD", "–"]


def test_a_reversed_commission_pays_nothing_and_shows_a_clawback_only_if_it_was_credited(member_client, program, link):
    credited = commission(link, status="reversed", credited=True, sale_refunded_cents=10000, deducted_cents=2000)
    never_credited = commission(link, status="reversed", credited=False, sale_refunded_cents=10000, deducted_cents=2000)
    page = member_client.get(url(program)).content.decode()
    assert row_of(page, credited)[5:9] == ["0.00 USD", "100.00 USD", "100.00 USD", "20.00 USD"]
    assert row_of(page, never_credited)[5:9] == ["0.00 USD", "100.00 USD", "100.00 USD", "–"]


def test_it_paginates_newest_first(member_client, program, link, django_assert_max_num_queries):
    oldest = commission(link, age_days=30)
    for n in range(COMMISSIONS_PER_PAGE):
        commission(link, age_days=n)
    # session, user, program, membership x2 (permission, role), count, page rows with partner and sale
    with django_assert_max_num_queries(8):
        first = member_client.get(url(program)).content.decode()
    assert first.count('id="commission-') == COMMISSIONS_PER_PAGE
    assert f'id="commission-{oldest.pk}"' not in first
    assert "Page 1 of 2" in first and f"{COMMISSIONS_PER_PAGE + 1} total" in first
    second = member_client.get(url(program) + "?page=2").content.decode()
    assert second.count('id="commission-') == 1 and f'id="commission-{oldest.pk}"' in second
    # A page past the end shows the last one rather than failing.
    assert f'id="commission-{oldest.pk}"' in member_client.get(url(program) + "?page=99").content.decode()


def test_it_filters_by_status_and_keeps_the_filter_across_pages(member_client, program, link):
    reversed_ = commission(link, status="reversed", sale_refunded_cents=10000, deducted_cents=2000)
    approved = commission(link, status="approved")
    page = member_client.get(url(program) + "?status=reversed").content.decode()
    assert f'id="commission-{reversed_.pk}"' in page and f'id="commission-{approved.pk}"' not in page
    assert '<option value="reversed" selected>' in page
    for _ in range(COMMISSIONS_PER_PAGE):
        commission(link, status="reversed")
    page = member_client.get(url(program) + "?status=reversed").content.decode()
    assert 'href="?status=reversed&amp;page=2"' in page


def test_other_programs_commissions_stay_out(member_client, program, link):
    other = CommissionFactory()
    page = member_client.get(url(program)).content.decode()
    assert f'id="commission-{other.pk}"' not in page
    assert "No commissions yet." in page


@pytest.mark.parametrize(
    ("cents", "currency", "expected"),
    [
        (12345, "USD", "123.45 USD"),
        (5, "EUR", "0.05 EUR"),
        (150000, "VND", "150,000 VND"),
        (123456789, None, "1,234,567.89"),
    ],
)
def test_money_reads_the_smallest_unit_in_major_units(cents, currency, expected):
    assert money(cents, currency) == expected
