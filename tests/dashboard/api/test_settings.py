"""GET and PATCH /api/v1/programs/:id/settings (dashboard sign-in)"""

import threading
from decimal import Decimal
from typing import Any
from unittest import mock

import pytest
from rest_framework.test import APIClient

from core import messages
from programs import services
from programs.messages import SETTINGS_EMPTY_PATCH
from programs.models import Program, ProgramKey, Role
from tests.factories import MembershipFactory, ProgramFactory, ReferralLinkFactory
from tests.helpers import bad_request, run_together, wait_for_lock_waiters
from tracking.link_cache import link_target_get

pytestmark = pytest.mark.django_db


def url(program) -> str:
    return f"/api/v1/programs/{program.pk}/settings"


@pytest.fixture
def program():
    return ProgramFactory(
        name="Shop",
        domain="shop.example.com",
        commission_type="percent",
        commission_rate=Decimal("20"),
        duration_months=0,
        cookie_duration=30,
        hold_days=30,
        lead_auth="browser_allowed",
    )


def settings_of(program) -> dict[str, Any]:
    program.refresh_from_db()
    return {
        "id": program.pk,
        "name": program.name,
        "domain": program.domain,
        "commission_type": program.commission_type,
        "commission_rate": program.commission_rate,
        "duration_months": program.duration_months,
        "cookie_duration": program.cookie_duration,
        "hold_days": program.hold_days,
        "lead_auth": program.lead_auth,
        "link_aliases": program.link_aliases,
    }


class TestGet:
    def test_it_answers_the_settings(self, sign_in, program):
        response = sign_in(program, Role.MEMBER).get(url(program))
        assert response.status_code == 200
        assert response.json() == {
            "data": {
                "id": program.pk,
                "name": "Shop",
                "domain": "shop.example.com",
                "commission_type": "percent",
                "commission_rate": 20,
                "duration_months": 0,
                "cookie_duration": 30,
                "hold_days": 30,
                "lead_auth": "browser_allowed",
                "api_token_masked": ProgramKey.objects.get(program=program, mode="live").masked,
                "link_aliases": [],
            }
        }
        assert response["X-RateLimit-Limit"] == "30"
        assert program.raw_api_key not in response.content.decode()

    def test_a_program_key_never_authenticates(self, api_client, program):
        response = api_client.get(url(program), HTTP_AUTHORIZATION=f"Bearer {program.raw_api_key}")
        assert response.status_code == 401


class TestPatch:
    def test_an_owner_changes_every_field_and_gets_the_result(self, owner, program):
        body = {
            "name": "  New name ",
            "domain": "new.example.com",
            "commission_type": "recurring_fixed",
            "commission_rate": 250,
            "duration_months": 6,
            "cookie_duration": 60,
            "hold_days": 0,
            "lead_auth": "server_required",
            "link_aliases": ["fpr", "ref"],
        }
        response = owner.patch(url(program), body, format="json")
        assert response.status_code == 200
        expected = {
            "id": program.pk,
            "name": "New name",
            "domain": "new.example.com",
            "commission_type": "recurring_fixed",
            "commission_rate": 250,
            "duration_months": 6,
            "cookie_duration": 60,
            "hold_days": 0,
            "lead_auth": "server_required",
            "link_aliases": ["fpr", "ref"],
        }
        assert response.json()["data"] == {
            **expected,
            "api_token_masked": ProgramKey.objects.get(program=program, mode="live").masked,
        }
        assert settings_of(program) == {**expected, "commission_rate": Decimal("250")}

    def test_an_admin_may_patch_a_member_may_not(self, sign_in, program):
        assert sign_in(program, Role.ADMIN).patch(url(program), {"hold_days": 7}, format="json").status_code == 200
        before = settings_of(program)
        response = sign_in(program, Role.MEMBER).patch(url(program), {"hold_days": 9}, format="json")
        assert response.status_code == 403
        assert settings_of(program) == before == {**before, "hold_days": 7}

    def test_only_the_sent_fields_change(self, owner, program):
        before = settings_of(program)
        response = owner.patch(url(program), {"commission_rate": "12.5"}, format="json")
        assert response.json()["data"]["commission_rate"] == 12.5
        assert settings_of(program) == {**before, "commission_rate": Decimal("12.5")}

    def test_link_aliases_are_set_and_turned_off(self, owner, program):
        response = owner.patch(url(program), {"link_aliases": ["fpr"]}, format="json")
        assert response.json()["data"]["link_aliases"] == ["fpr"]
        assert settings_of(program)["link_aliases"] == ["fpr"]
        assert owner.patch(url(program), {"link_aliases": []}, format="json").json()["data"]["link_aliases"] == []
        assert settings_of(program)["link_aliases"] == []

    def test_a_new_cookie_window_reaches_clicks_at_once(self, owner, program):
        link = ReferralLinkFactory(program=program)
        assert link_target_get(link.short_link).cookie_window_days == 30
        owner.patch(url(program), {"cookie_duration": 7}, format="json")
        assert link_target_get(link.short_link).cookie_window_days == 7

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            # The CLI init's checks and messages, in its order
            ({"name": ""}, "name must be a non-empty string of at most 200 characters"),
            ({"name": "x" * 201}, "name must be a non-empty string of at most 200 characters"),
            ({"domain": 5}, "domain must be a non-empty string of at most 253 characters"),
            ({"commission_type": "bogus"}, messages.PROGRAM_INVALID_COMMISSION_TYPE.format(value="bogus")),
            ({"commission_rate": 0}, messages.PROGRAM_RATE_NOT_POSITIVE),
            ({"commission_rate": "abc"}, messages.PROGRAM_RATE_NOT_POSITIVE),
            ({"commission_rate": True}, messages.PROGRAM_RATE_NOT_POSITIVE),
            ({"commission_rate": 101}, messages.PROGRAM_RATE_OVER_100),
            ({"duration_months": -1}, messages.PROGRAM_DURATION_INVALID),
            ({"duration_months": 1.5}, messages.PROGRAM_DURATION_INVALID),
            ({"duration_months": None}, messages.PROGRAM_DURATION_INVALID),
            ({"cookie_duration": 0}, messages.PROGRAM_COOKIE_INVALID),
            ({"cookie_duration": 366}, messages.PROGRAM_COOKIE_INVALID),
            ({"cookie_duration": None}, messages.PROGRAM_COOKIE_INVALID),
            ({"cookie_duration": "²"}, messages.PROGRAM_COOKIE_INVALID),
            ({"duration_months": "¹²"}, messages.PROGRAM_DURATION_INVALID),
            # Then hold_days and lead_auth
            ({"hold_days": -1}, "hold_days must be a whole number of days from 0 to 365"),
            ({"hold_days": 366}, "hold_days must be a whole number of days from 0 to 365"),
            ({"hold_days": "ten"}, "hold_days must be a whole number of days from 0 to 365"),
            ({"hold_days": None}, "hold_days must be a whole number of days from 0 to 365"),
            ({"hold_days": False}, "hold_days must be a whole number of days from 0 to 365"),
            ({"hold_days": "³"}, "hold_days must be a whole number of days from 0 to 365"),
            ({"lead_auth": "server"}, "lead_auth must be browser_allowed or server_required"),
            ({"lead_auth": None}, "lead_auth must be browser_allowed or server_required"),
            ({"link_aliases": "fpr"}, "link_aliases must be a list of query parameter names"),
            ({"link_aliases": None}, "link_aliases must be a list of query parameter names"),
            ({"link_aliases": ["a", "b", "c", "d", "e", "f"]}, "link_aliases holds at most 5 names"),
            (
                {"link_aliases": ["Fpr"]},
                "'Fpr' is not a usable link alias: a lowercase letter (after one optional underscore), then lowercase "
                "letters, digits or underscores, 32 characters at most",
            ),
            (
                {"link_aliases": [7]},
                "7 is not a usable link alias: a lowercase letter (after one optional underscore), then lowercase "
                "letters, digits or underscores, 32 characters at most",
            ),
            (
                {"link_aliases": ["via"]},
                "'via' is always accepted: aff and via are the spec's own parameters, not aliases",
            ),
            ({"link_aliases": ["fpr", "fpr"]}, "'fpr' is listed twice in link_aliases"),
            # The first failure wins, in that order
            (
                {"lead_auth": "x", "hold_days": -1, "name": ""},
                "name must be a non-empty string of at most 200 characters",
            ),
            ({"lead_auth": "x", "hold_days": -1}, "hold_days must be a whole number of days from 0 to 365"),
            # Fields that cannot be set here
            (
                {"id": 9},
                "Unknown or read-only field(s): id. Editable: "
                + ", ".join(
                    [
                        "name",
                        "domain",
                        "commission_type",
                        "commission_rate",
                        "duration_months",
                        "cookie_duration",
                        "hold_days",
                        "lead_auth",
                        "link_aliases",
                    ]
                ),
            ),
            (
                {"api_token_masked": "x", "cookie_window_days": 3, "name": "ok"},
                (
                    "Unknown or read-only field(s): api_token_masked, cookie_window_days. Editable: name, domain, "
                    "commission_type, commission_rate, duration_months, cookie_duration, hold_days, lead_auth, "
                    "link_aliases"
                ),
            ),
        ],
    )
    def test_bad_input_is_refused_and_changes_nothing(self, owner, program, body, message):
        before = settings_of(program)
        # A valid change beside the bad one must not be saved either.
        response = owner.patch(url(program), {"domain": "changed.example.com", **body}, format="json")
        assert response.status_code == 400
        assert response.json() == bad_request(message)
        assert settings_of(program) == before

    def test_the_rate_is_checked_against_the_type_the_program_will_have(self, owner, program):
        Program.objects.filter(pk=program.pk).update(commission_type="fixed", commission_rate=Decimal("500"))
        response = owner.patch(url(program), {"commission_type": "percent"}, format="json")
        assert response.json() == bad_request(messages.PROGRAM_RATE_OVER_100)
        ok = owner.patch(url(program), {"commission_type": "percent", "commission_rate": 30}, format="json")
        assert ok.status_code == 200
        assert settings_of(program)["commission_type"] == "percent"

    def test_whole_numbers_may_be_sent_as_strings_or_integral_floats(self, owner, program):
        response = owner.patch(url(program), {"hold_days": "14", "cookie_duration": 45.0}, format="json")
        assert response.status_code == 200
        assert (settings_of(program)["hold_days"], settings_of(program)["cookie_duration"]) == (14, 45)

    @pytest.mark.parametrize("body", [[{"name": "x"}], "name=x", 5])
    def test_a_body_that_is_not_an_object_is_400(self, owner, program, body):
        response = owner.patch(url(program), body, format="json")
        assert response.status_code == 400
        assert response.json() == bad_request("Request body must be a JSON object")

    def test_a_failed_save_is_a_500_and_changes_nothing(self, owner, program):
        before = settings_of(program)
        with mock.patch.object(Program, "save", side_effect=RuntimeError("boom")):
            response = owner.patch(url(program), {"name": "Renamed"}, format="json")
        assert response.status_code == 500
        assert response.json()["error"]["message"] == "Failed to update program settings"
        assert settings_of(program) == before

    def test_it_is_limited_to_30_per_minute_per_sign_in(self, owner, program, api_client):
        for _ in range(15):
            assert owner.get(url(program)).status_code == 200
            assert owner.patch(url(program), {"hold_days": 3}, format="json").status_code == 200
        response = owner.get(url(program))
        assert response.status_code == 429
        assert response.json()["error"]["code"] == "rate_limited"
        other = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
        api_client.logout()
        api_client.force_login(other)  # a new session: its own bucket
        assert api_client.get(url(program)).status_code == 200

    def test_the_query_count(self, owner, program, django_assert_num_queries):
        # 1 session, 2 user, 3 program, 4 membership, 5 SAVEPOINT, 6 program SELECT ... FOR UPDATE,
        # 7 UPDATE program, 8 RELEASE SAVEPOINT, 9 live key (for api_token_masked)
        with django_assert_num_queries(9):
            assert owner.patch(url(program), {"hold_days": 3}, format="json").status_code == 200


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_patches_cannot_combine_into_a_percent_rate_over_100():
    """One PATCH switches a fixed program to percent (rate 50 is fine), the other raises the rate to 500
    (fine for fixed). Each passes against the old row; the row lock makes the second see the first."""
    program = ProgramFactory(commission_type="fixed", commission_rate=Decimal("50"))
    user = MembershipFactory(workspace=program.workspace, role=Role.OWNER).user
    bodies = [{"commission_type": "percent"}, {"commission_rate": 500}]
    holding = threading.Event()  # the first PATCH holds the row lock and has checked against the old row
    second_done = threading.Event()

    def patch(n: int) -> int:
        if n == 1:
            assert holding.wait(timeout=30)
        client = APIClient()
        client.force_login(user)
        try:
            return client.patch(url(program), bodies[n], format="json").status_code
        finally:
            if n == 1:
                second_done.set()

    checked = services.commission_rate_check

    def check_then_hold(**kwargs):
        # The first PATCH stays in its transaction after the check until the second queues behind its row
        # lock (or, were the lock missing, until the second has checked the old row too and finished).
        checked(**kwargs)
        if not holding.is_set():
            holding.set()
            wait_for_lock_waiters(1, or_until=second_done.is_set)

    with mock.patch.object(services, "commission_rate_check", check_then_hold):
        statuses = run_together(2, patch)
    program.refresh_from_db()
    assert sorted(statuses) == [200, 400]
    assert not (program.commission_type == "percent" and program.commission_rate > 100)


class TestPatchRefusals:
    def test_an_empty_patch_is_refused_and_changes_nothing(self, owner, program):
        before = settings_of(program)
        response = owner.patch(url(program), {}, format="json")
        assert response.status_code == 400
        assert response.json() == bad_request(SETTINGS_EMPTY_PATCH)
        assert "name, domain, commission_type" in SETTINGS_EMPTY_PATCH
        assert settings_of(program) == before

    def test_a_rate_that_rounds_to_zero_is_refused_not_a_server_error(self, owner, program):
        # Stored with 4 decimals: 0.00001 would become 0 and break the positive-rate constraint.
        response = owner.patch(url(program), {"commission_type": "fixed", "commission_rate": 1e-38}, format="json")
        assert response.status_code == 400
        assert response.json() == bad_request(messages.PROGRAM_RATE_NOT_POSITIVE)
