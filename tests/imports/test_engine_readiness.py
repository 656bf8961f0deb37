"""The readiness checklist's Import check: the last import, what came over, interrupted, what to check after."""

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from imports import engine
from imports.engine import import_source
from imports.models import ImportRun
from imports.platforms import PLATFORMS
from imports.platforms.base import Platform
from insight.readiness import readiness_compute
from programs.models import Partner, PartnerAccount
from tests.factories import ProgramFactory
from tests.imports.engine_sources import small_source

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fake_platform(monkeypatch):
    monkeypatch.setitem(
        PLATFORMS,
        "fake",
        Platform(
            name="fake",
            label="Fake",
            link_param="fpr",
            stripe_metadata_keys=(),
            export_help="",
            reader=lambda files: small_source(),
        ),
    )


def import_of(program):
    with mock.patch("insight.readiness.mistakes_find", return_value=[]):
        verdict = readiness_compute(program=program)
    return next((check for check in verdict["checks"] if check["id"] == "import"), None), verdict


def test_no_import_no_check():
    check, _ = import_of(ProgramFactory())
    assert check is None


def test_after_an_import_it_names_what_came_over_and_what_to_check():
    program = ProgramFactory()
    import_source(program, small_source(), dry_run=False)
    run = ImportRun.objects.get()
    check, verdict = import_of(program)
    assert check["status"] == "pass" and check["title"] == "Import"
    assert check["detail"] == (
        f"Last import: Fake, {run.finished_at:%Y-%m-%d %H:%M:%S} UTC: 3 partners, 3 links, 6 referrals, "
        "10 commissions came over (1 row(s) refused)"
    )
    assert check["next_step"] == (
        "After switching: Turn on ?fpr= (Overview → Link parameters → Also accept) to keep the 3 imported Fake links "
        "working; Connect Stripe (the Stripe tab) so renewals of imported customers "
        "are attributed; "
        "Invite the 3 imported partner(s) who have not signed in yet (Partners & links); their payout emails from "
        "Fake are in their notes."
    )
    assert verdict["checks"][-1]["id"] == "import"

    # Once the alias is on, Stripe connected and the partners signed in, nothing is left to check.
    program.link_aliases = ["fpr"]
    program.stripe_account_id = "acct_123"
    program.save()
    for n, partner in enumerate(Partner.objects.filter(workspace=program.workspace)):
        partner.account = PartnerAccount.objects.create(email=f"signed{n}@example.com")
        partner.save()
    check, _ = import_of(program)
    assert check["status"] == "pass" and check["next_step"] == ""


def test_an_interrupted_import_warns_until_it_is_resumed(monkeypatch):
    program = ProgramFactory()

    def crash(kind, number):
        if number == 3:
            raise RuntimeError("worker killed")

    monkeypatch.setattr(engine, "batch_hook", crash)
    with pytest.raises(RuntimeError):
        import_source(program, small_source(), dry_run=False, batch_size=2)
    check, verdict = import_of(program)
    assert check["status"] == "warn"
    assert check["detail"].startswith("An import was interrupted (last: Fake, started ")
    assert "only whole batches are here, not the whole import" in check["detail"]
    assert "it continues where it stopped" in check["next_step"]
    assert verdict["status"] == "ready_with_warnings" or not verdict["ready"]

    monkeypatch.setattr(engine, "batch_hook", lambda kind, number: None)
    import_source(program, small_source(), dry_run=False, batch_size=2)
    check, _ = import_of(program)
    assert check["status"] == "pass" and check["detail"].startswith("Last import: Fake")


def test_a_run_silent_too_long_counts_as_interrupted():
    program = ProgramFactory()
    ImportRun.objects.create(program=program, platform="fake", files_digest="x")
    check, _ = import_of(program)
    assert check["status"] == "pass" and check["detail"].startswith("Importing from Fake")
    ImportRun.objects.update(updated_at=timezone.now() - timedelta(hours=1))
    check, _ = import_of(program)
    assert check["status"] == "warn"


def test_groups_and_codes_that_came_over_are_named():
    from tests.imports.test_engine_groups import grouped_source

    program = ProgramFactory()
    import_source(program, grouped_source(), dry_run=False)
    run = ImportRun.objects.get()
    check, _ = import_of(program)
    assert check["detail"] == (
        f"Last import: Fake, {run.finished_at:%Y-%m-%d %H:%M:%S} UTC: 3 partners, 3 links, 6 referrals, "
        "10 commissions, 3 groups, 2 coupon codes came over (1 row(s) refused)"
    )
