"""The daily rollups (tracking.rollups): a run folds events in, the reads add what is not folded in yet, and
either way every read equals a recount of the raw events."""

import threading
from datetime import UTC, datetime, timedelta
from importlib import import_module
from typing import Any

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from commissions.models import Commission
from commissions.selectors import commission_payable_by_partner
from commissions.services import commission_void
from insight.explain import sale_explain
from insight.readiness import readiness_compute
from programs.models import PartnerProgram, ReferralLink, Role
from tests.event_activity import ACTIVITY_NOW, click, lead, sale
from tests.factories import MembershipFactory, UserFactory
from tracking import rollups
from tracking.models import ClickEvent, DailyRollup, LeadEvent, RollupState, SaleEvent
from tracking.retention import raw_clicks_prune
from tracking.rollups import link_click_counts, rollup_read, rollups_update, rollups_verify
from tracking.selectors.performance import tracking_performance_get
from tracking.services.refund import refund_record

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen")]

NOW = ACTIVITY_NOW
SETTLED = timedelta(0)
RANGE = {"date_from": (NOW - timedelta(days=60)).date(), "date_to": NOW.date()}


def reads(program) -> tuple[dict[str, Any], dict[str, Any]]:
    readiness = readiness_compute(program=program)
    return tracking_performance_get(program=program, **RANGE), {
        "counts": readiness["counts"],
        "last_event_at": readiness["last_event_at"],
    }


def test_a_run_changes_no_read_and_the_rollups_equal_a_recount(program, activity, alice_link, bob_link):
    before = reads(program)
    result = rollups_update(settle=SETTLED)
    assert result.folded == {"click": 5, "lead": 3, "sale": 6}
    assert result.caught_up
    assert reads(program) == before
    assert rollups_verify() == []
    # Everything is folded in: the reads now come from the rollup rows alone.
    state = RollupState.objects.get(pk=1)
    assert state.click_id == ClickEvent.objects.order_by("-id").first().pk
    assert DailyRollup.objects.filter(program=program, is_test=False, day=NOW.date() - timedelta(days=1)).exists()
    payable = commission_payable_by_partner(
        program_id=program.pk, partner_ids=[alice_link.partner_id, bob_link.partner_id]
    )
    # The live commissions only: the test sale's commission is left out, as from every report.
    payable[alice_link.partner_id] -= Commission.objects.get(sale__is_test=True).amount_cents
    assert (
        rollup_read(
            lambda marks: rollups.partner_commission_cents(
                marks, program_id=program.pk, partner_ids=[alice_link.partner_id, bob_link.partner_id]
            )
        )
        == payable
    )


def test_half_folded_reads_equal_the_whole(program, alice_link, bob_link):
    for n in range(6):
        click(alice_link if n % 2 else bob_link, NOW - timedelta(hours=n))
    rollups_update(settle=SETTLED)
    before_more = reads(program)
    for n in range(4):
        customer = click(bob_link, NOW - timedelta(days=1, hours=n))
        lead(customer, NOW - timedelta(days=1))
        sale(customer, NOW - timedelta(hours=1), 2500, commission=500)
    mixed = reads(program)
    assert mixed != before_more
    rollups_update(settle=SETTLED)
    assert reads(program) == mixed
    assert rollups_verify() == []


def test_events_younger_than_the_settle_time_wait_for_a_later_run(program, alice_link):
    click(alice_link, NOW)
    assert rollups_update(settle=timedelta(seconds=30)).folded["click"] == 0
    assert RollupState.objects.get(pk=1).click_id == 0
    assert reads(program)[0]["totals"]["clicks"] == 1  # counted live meanwhile
    assert rollups_update(now=NOW + timedelta(seconds=31), settle=timedelta(seconds=30)).folded["click"] == 1


def test_a_refund_or_void_after_the_run_is_recounted_by_the_next(program, activity, alice_link):
    rollups_update(settle=SETTLED)
    commission = Commission.objects.get(partner=alice_link.partner, status="pending", sale__is_test=False)
    commission_void(commission_id=commission.pk, reason="fraud", actor="test")
    # Until the next run the report still shows what the commission paid (the freshness of changes)...
    assert reads(program)[0]["totals"]["commission_cents"] == 2600
    result = rollups_update(settle=SETTLED)
    # ... and the run recounts its sale's day.
    assert result.recounted_days == 1
    assert reads(program)[0]["totals"]["commission_cents"] == 600
    assert rollups_verify() == []


def test_a_lead_settling_after_the_run_is_recounted_by_the_next(program, activity):
    rollups_update(settle=SETTLED)
    assert reads(program)[0]["totals"]["leads"] == 1
    LeadEvent.objects.filter(provisional=True).update(provisional=False, settled_at=NOW)
    rollups_update(settle=SETTLED)
    assert reads(program)[0]["totals"]["leads"] == 2
    assert rollups_verify() == []


def test_verify_reports_a_rollup_that_differs(program, activity):
    rollups_update(settle=SETTLED)
    row = DailyRollup.objects.filter(clicks__gt=0).first()
    DailyRollup.objects.filter(pk=row.pk).update(clicks=row.clicks + 1)
    problems = rollups_verify()
    assert len(problems) == 1 and problems[0].startswith("click ")
    with pytest.raises(CommandError, match="1 rollup row"):
        call_command("rollup", "verify")


class TestCounters:
    def test_a_run_adds_live_clicks_to_the_link_and_partner_counters_once(self, program, alice_link):
        for n in range(3):
            click(alice_link, NOW - timedelta(minutes=n))
        click(alice_link, NOW, is_test=True)
        alice_link.refresh_from_db()
        assert alice_link.clicks == 0  # the click itself updates no counter row
        assert link_click_counts([alice_link.pk])[alice_link.pk] == rollups.ClickCount(3, NOW)
        rollups_update(settle=SETTLED)
        rollups_update(settle=SETTLED)
        alice_link.refresh_from_db()
        assert (alice_link.clicks, alice_link.last_clicked) == (3, NOW)
        assert PartnerProgram.objects.get(partner=alice_link.partner, program=program).clicks == 3
        assert link_click_counts([alice_link.pk])[alice_link.pk] == rollups.ClickCount(3, NOW)

    def test_clicks_counted_before_the_upgrade_are_not_counted_again(self, program, alice_link):
        click(alice_link, NOW - timedelta(hours=2))
        ReferralLink.objects.filter(pk=alice_link.pk).update(clicks=1)
        RollupState.objects.update_or_create(pk=1, defaults={"counters_from_click_id": ClickEvent.objects.get().pk})
        assert link_click_counts([alice_link.pk])[alice_link.pk].clicks == 1
        click(alice_link, NOW)
        rollups_update(settle=SETTLED)
        alice_link.refresh_from_db()
        assert alice_link.clicks == 2
        assert reads(program)[0]["totals"]["clicks"] == 2


class TestSaleCounters:
    """Sales and revenue on the partner-program row: added by the run as it folds new sales in, as the sale path
    once added them (live sales with a partner, their gross amount), never by the sale itself."""

    @staticmethod
    def counters(link) -> tuple[int, int]:
        row = PartnerProgram.objects.get(partner=link.partner, program=link.program)
        return row.sales, row.revenue_cents

    @staticmethod
    def not_counted(program) -> dict[int, rollups.SaleCount]:
        return rollup_read(lambda marks: rollups.sales_not_on_counters(marks, program_id=program.pk))

    def test_a_run_adds_live_sales_with_a_partner_once(self, program, alice_link, bob_link):
        alice, bob = click(alice_link, NOW - timedelta(days=1)), click(bob_link, NOW - timedelta(days=1))
        sale(alice, NOW - timedelta(days=1), 2500, commission=500)
        sale(alice, NOW, 1500)  # paying nothing, still a sale
        sale(bob, NOW, 700, commission=140)
        assert self.counters(alice_link) == (0, 0)  # the sale itself updates no counter row
        assert self.not_counted(program) == {
            alice_link.partner_id: rollups.SaleCount(2, 4000),
            bob_link.partner_id: rollups.SaleCount(1, 700),
        }
        rollups_update(settle=SETTLED)
        assert (self.counters(alice_link), self.counters(bob_link)) == ((2, 4000), (1, 700))
        assert self.not_counted(program) == {}
        assert rollups_update(settle=SETTLED).folded["sale"] == 0
        assert (self.counters(alice_link), self.counters(bob_link)) == ((2, 4000), (1, 700))

    def test_test_sales_and_sales_without_a_partner_add_nothing(self, program, alice_link):
        customer = click(alice_link, NOW - timedelta(hours=1))
        sale(customer, NOW, 2500, commission=500, is_test=True)
        sale(customer, NOW, 700, partner=None, attributed=False)  # as a payment nobody is credited for is stored
        assert self.not_counted(program) == {}
        assert rollups_update(settle=SETTLED).folded["sale"] == 2
        assert set(PartnerProgram.objects.filter(program=program).values_list("sales", "revenue_cents")) == {(0, 0)}

    def test_sales_counted_before_the_upgrade_are_not_counted_again(self, program, alice_link):
        customer = click(alice_link, NOW - timedelta(hours=2))
        counted = sale(customer, NOW - timedelta(hours=1), 2500)
        PartnerProgram.objects.filter(partner=alice_link.partner, program=program).update(sales=1, revenue_cents=2500)
        RollupState.objects.update_or_create(pk=1, defaults={"counters_from_sale_id": counted.pk})
        assert self.not_counted(program) == {}
        sale(customer, NOW, 1000)
        assert self.not_counted(program) == {alice_link.partner_id: rollups.SaleCount(1, 1000)}
        rollups_update(settle=SETTLED)
        rollups_update(settle=SETTLED)
        assert self.counters(alice_link) == (2, 3500)
        assert reads(program)[0]["totals"]["revenue_cents"] == 3500  # the rollups fold both in all the same

    def test_the_migration_starts_the_counters_after_the_last_sale_recorded(self, program, alice_link):
        """Sales recorded before the upgrade were counted by the sale path itself."""
        last = sale(click(alice_link, NOW - timedelta(hours=1)), NOW, 2500)
        import_module("tracking.migrations.0009_rollupstate_counters_from_sale_id").sales_counted_so_far(apps, None)
        assert RollupState.objects.get(pk=1).counters_from_sale_id == last.pk
        assert self.not_counted(program) == {}
        rollups_update(settle=SETTLED)
        assert self.counters(alice_link) == (0, 0)

    def test_a_recount_adds_nothing_to_the_counters(self, program, alice_link):
        customer = click(alice_link, NOW - timedelta(hours=2))
        sale(customer, NOW - timedelta(hours=1), 2500, commission=500)
        rollups_update(settle=SETTLED)
        commission_void(commission_id=Commission.objects.get().pk, reason="fraud", actor="test")
        assert rollups_update(settle=SETTLED).recounted_days == 1
        assert self.counters(alice_link) == (1, 2500)  # gross: a void or a refund changes neither

    def test_the_partners_page_shows_a_sale_before_the_run_and_once_after(self, program, alice_link):
        client = Client()
        client.force_login(MembershipFactory(workspace=program.workspace, role=Role.MEMBER).user)
        PartnerProgram.objects.filter(partner=alice_link.partner, program=program).update(sales=2, revenue_cents=10000)
        sale(click(alice_link, NOW - timedelta(hours=1)), NOW, 2550, commission=510)

        def card() -> str:
            page = client.get(f"/programs/{program.pk}/partners").content.decode()
            return page[page.index(f'id="partner-{alice_link.partner_id}"') :].split("</section>")[0]

        shown = "<dt>Sales</dt><dd>3</dd>", "<dt>Revenue</dt><dd>125.50</dd>"
        assert all(text in card() for text in shown)  # the counters plus the sale not on them yet
        rollups_update(settle=SETTLED)
        assert self.counters(alice_link) == (3, 12550)
        assert all(text in card() for text in shown)  # now on the counters alone, not twice


def test_a_read_is_taken_again_when_a_run_commits_during_it(program, alice_link, monkeypatch):
    click(alice_link, NOW)
    calls = []

    def read(marks):
        calls.append(marks)
        if len(calls) == 1:
            rollups_update(settle=SETTLED)  # commits between the two watermark reads
        return marks.click_id

    assert rollup_read(read) == ClickEvent.objects.get().pk
    assert len(calls) == 2


class TestRetention:
    def test_pruned_clicks_keep_their_totals_and_everything_else_works(self, program, activity, api_client):
        before = reads(program)
        result = raw_clicks_prune(older_than_days=1, now=NOW + timedelta(minutes=1))
        assert result.deleted == 4 and result.before == (NOW - timedelta(days=1)).date()
        assert ClickEvent.objects.filter(click_timestamp__lt=datetime(2025, 5, 19, tzinfo=UTC)).count() == 0
        assert ClickEvent.objects.count() == 1
        assert reads(program)[0] == before[0]
        assert reads(program)[1]["counts"] == before[1]["counts"]
        assert rollups_verify() == []

    def test_explain_and_refunds_work_on_what_remains(self, program, activity):
        sold = SaleEvent.objects.filter(program=program, is_test=False, commission__status="pending").first()
        raw_clicks_prune(older_than_days=1, now=NOW + timedelta(minutes=1))
        explained = sale_explain(program=program, transaction_id=sold.processor_event_id)
        assert (explained["sale"]["id"], explained["partner"]["id"]) == (sold.pk, sold.partner_id)
        outcome = refund_record(data={"transaction_id": sold.processor_event_id}, key=program.keys.get(mode="live"))
        assert outcome.status == "reversed"
        assert readiness_compute(program=program)["counts"]["clicks"] == 4  # all four live clicks, three pruned

    def test_the_command_needs_a_number_of_days(self, settings):
        settings.RAW_CLICK_RETENTION_DAYS = 0
        with pytest.raises(CommandError, match="older-than-days"):
            call_command("prune_clicks")


def test_the_beat_runs_the_rollups_every_interval(settings):
    assert settings.CELERY_BEAT_SCHEDULE["update-rollups"] == {
        "task": "tracking.update_rollups",
        "schedule": float(settings.ROLLUP_INTERVAL_SECONDS),
    }


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_runs_fold_each_event_once(alice_link):
    for n in range(20):
        click(alice_link, NOW - timedelta(minutes=n))
    errors = []

    def run() -> None:
        try:
            rollups_update(settle=SETTLED)
        except Exception as error:  # noqa: BLE001
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sum(DailyRollup.objects.values_list("clicks", flat=True)) == 20
    alice_link.refresh_from_db()
    assert alice_link.clicks == 20
    assert rollups_verify() == []


def test_admin_lists_the_rollups_read_only(client, program, activity):
    rollups_update(settle=SETTLED)
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    for name in ("dailyrollup", "rollupstate"):
        assert client.get(f"/admin/tracking/{name}/").status_code == 200
        assert client.get(f"/admin/tracking/{name}/add/").status_code == 403
