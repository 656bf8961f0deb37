"""The program overview: key facts from the database, and the funnel chart's page furniture (the chart itself is
drawn in the browser from the performance API; see tests/browser/test_dashboard_browser.py)."""

import re
from datetime import timedelta
from decimal import Decimal

import pytest
import time_machine
from django.utils import timezone

from dashboard.views import commission_terms
from programs.models import ProgramKey
from tests.factories import ProgramFactory, ReferralLinkFactory

pytestmark = pytest.mark.django_db


def test_it_shows_the_key_facts(owner_client, program):
    program.stripe_account_id = "acct_Facts1"
    program.hold_days = 14
    program.save()
    ReferralLinkFactory(program=program)
    ReferralLinkFactory(program=program, is_active=False)

    page = owner_client.get(f"/programs/{program.pk}/").content.decode()

    assert "acme.example.com" in page
    assert "20% of every sale except renewals" in page
    assert "30 days" in page and "14 days" in page
    assert "Browser leads settle at once" in page
    assert ProgramKey.objects.get(program=program, mode="live").masked in page
    assert program.raw_api_key not in page
    assert "acct_Facts1" in page
    assert "2 enrolled, 1 active link" in page


def test_it_wires_the_funnel_chart_to_the_performance_api_with_a_vendored_chart_library(owner_client, program):
    page = owner_client.get(f"/programs/{program.pk}/").content.decode()
    assert f'data-performance-url="/api/tracking/performance/{program.pk}"' in page
    assert f'data-status-url="/api/tracking/status/{program.pk}"' in page
    assert '<canvas id="funnel-chart"' in page
    assert 'src="/static/vendor/chart.js/chart.umd.min.js"' in page
    assert 'src="/static/js/dashboard-overview.js"' in page
    # Nothing is loaded from another host (a CDN): every script and stylesheet is ours or inline data. Checked on the
    # tags themselves, since names in the page's data may contain any text.
    external = re.findall(r'<(?:script|link)\b[^>]*\b(?:src|href)="(?!/|data:)[^"]*"', page)
    assert external == []


@time_machine.travel("2026-03-15T10:00:00Z", tick=False)
def test_the_range_defaults_to_the_last_30_days(owner_client, program):
    page = owner_client.get(f"/programs/{program.pk}/").content.decode()
    assert 'id="range-from" value="2026-02-14"' in page
    assert 'id="range-to" value="2026-03-15"' in page


def test_the_range_comes_from_the_address(owner_client, program):
    page = owner_client.get(f"/programs/{program.pk}/?from=2026-01-01&to=2026-01-31").content.decode()
    assert 'id="range-from" value="2026-01-01"' in page and 'id="range-to" value="2026-01-31"' in page


def test_a_backwards_or_broken_range_falls_back_to_the_default(owner_client, program):
    today = timezone.now().date()
    for query in ["?from=2026-02-01&to=2026-01-01", "?from=yesterday&to=2026-01-01"]:
        page = owner_client.get(f"/programs/{program.pk}/{query}").content.decode()
        assert f'id="range-to" value="{today.isoformat()}"' in page
        assert f'id="range-from" value="{(today - timedelta(days=29)).isoformat()}"' in page


@pytest.mark.parametrize(
    ("commission_type", "rate", "months", "expected"),
    [
        ("percent", "20", 0, "20% of every sale except renewals"),
        ("percent", "12.5", 0, "12.5% of every sale except renewals"),
        ("fixed", "500", 0, "500 (smallest currency unit) on every sale except renewals"),
        (
            "recurring_percent",
            "30",
            12,
            "30% of every sale, renewals included, for 12 months after the customer's first commissioned sale",
        ),
        (
            "recurring_percent",
            "30",
            1,
            "30% of every sale, renewals included, for 1 month after the customer's first commissioned sale",
        ),
        ("recurring_fixed", "250", 0, "250 (smallest currency unit) on every sale, renewals included, for life"),
    ],
)
def test_commission_terms_read_as_a_sentence(commission_type, rate, months, expected):
    program = ProgramFactory.build(
        commission_type=commission_type, commission_rate=Decimal(rate), duration_months=months
    )
    assert commission_terms(program) == expected
