"""Mistakes no longer hidden (issue 25), made over HTTP as an integrator would, then named by
GET /api/v1/programs/me/readiness: test-key traffic that looks like production beside the live key, refused clicks
from a backend with its program key (current, test, past its deadline or replaced), and both tracker
misconfigurations at once."""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from insight.diagnosis import keys_and_stripe
from programs.models import ApiCall, ProgramKey
from programs.services import program_key_mark_rotation, program_key_regenerate
from tests.factories import ProgramFactory, ReferralLinkFactory
from tests.helpers import bearer

pytestmark = pytest.mark.django_db

CLICK = "/api/v1/track/click"
SALE = "/api/v1/track/sale"
VISIT = "/api/v1/track/visit"
READINESS = "/api/v1/programs/me/readiness"


@pytest.fixture
def program():
    return ProgramFactory(domain="shop.example.com")


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program)


def mistakes(client, program, key: str | None = None) -> dict[str, dict[str, Any]]:
    response = client.get(READINESS, **bearer(key or program.raw_api_key))
    assert response.status_code == 200, response.content
    return {mistake["code"]: mistake for mistake in response.json()["mistakes"]}


def click(client, key: str, affiliate_url: str, **fields):
    return client.post(CLICK, {"affiliate_url": affiliate_url, **fields}, format="json", **bearer(key))


class TestTestKeyBesideTheLiveKey:
    def live_click(self, client, program, link) -> None:
        response = click(client, program.raw_api_key, f"https://shop.example.com/?aff={link.short_link}")
        assert response.status_code == 200, response.content

    def test_clicks_on_pages_of_the_shop_are_named(self, api_client, program, link):
        self.live_click(api_client, program, link)
        for _ in range(keys_and_stripe.TEST_TRAFFIC_MIN_CALLS):
            response = click(
                api_client,
                program.raw_test_api_key,
                f"https://shop.example.com/?aff={link.short_link}",
                page_url="https://www.shop.example.com/pricing",
            )
            assert response.status_code == 200, response.content

        found = mistakes(api_client, program)["test_key_on_live_traffic"]

        assert found["title"] == (
            "10 tracking calls used the test key beside the live key's 1, and look like production: "
            "10 on shop.example.com"
        )
        assert found["severity"] == "warn" and found["count"] == 10
        assert "aff_test_" in found["fix"] and "shop.example.com" in found["fix"]

    def test_visitors_referred_by_other_sites_and_many_customer_keys_are_named(self, api_client, program, link):
        self.live_click(api_client, program, link)
        for n in range(keys_and_stripe.TEST_TRAFFIC_MIN_CALLS):
            referred = {"referrer_url": "https://www.google.com/search?q=shop"} if n < 4 else {}
            click(api_client, program.raw_test_api_key, f"https://shop.example.com/?aff={link.short_link}", **referred)
        for n in range(keys_and_stripe.TEST_CUSTOMERS_MIN):
            sale = {"transaction_id": f"t{n}", "amount_cents": 1000, "customer_key": f"customer_{n}"}
            assert api_client.post(SALE, sale, format="json", **bearer(program.raw_test_api_key)).status_code == 200

        title = mistakes(api_client, program)["test_key_on_live_traffic"]["title"]

        assert "4 referred by other sites (google.com)" in title
        assert f"{keys_and_stripe.TEST_CUSTOMERS_MIN} distinct customer keys" in title

    def test_a_developer_trying_things_beside_the_live_key_is_not_a_mistake(self, api_client, program, link):
        self.live_click(api_client, program, link)
        for _ in range(keys_and_stripe.TEST_TRAFFIC_MIN_CALLS + 5):
            click(
                api_client,
                program.raw_test_api_key,
                f"https://shop.example.com/?aff={link.short_link}",
                page_url="http://localhost:3000/pricing",
                referrer_url="http://localhost:3000/",
            )
        assert "test_key_on_live_traffic" not in mistakes(api_client, program)


class TestRefusedClicksFromABackend:
    """Clicks refused for a missing or unknown code carry the program of the key they were sent with."""

    def refused(self, client, key: str, url: str) -> None:
        assert click(client, key, url).status_code == 400

    def test_live_and_test_keys(self, api_client, program, link):
        self.refused(api_client, program.raw_api_key, "https://shop.example.com/pricing")
        self.refused(api_client, program.raw_test_api_key, "https://shop.example.com/?aff=typo")
        found = mistakes(api_client, program)["click_without_known_code"]
        assert found["count"] == 2
        assert "1 without ?aff=/?via=, 1 with an unknown code" in found["title"]
        assert set(ApiCall.objects.filter(route="track-click").values_list("program_id", flat=True)) == {program.pk}

    def test_a_key_past_its_rotation_deadline(self, api_client, program, link):
        key = ProgramKey.objects.get(program=program, mode="live")
        program_key_mark_rotation(key=key, deadline=timezone.now() - timedelta(minutes=1))
        self.refused(api_client, program.raw_api_key, "https://shop.example.com/?aff=typo")
        row = ApiCall.objects.get(route="track-click")
        assert (row.program_id, row.key_masked, row.key_mode) == (program.pk, key.masked, "live")
        assert mistakes(api_client, program, program.raw_test_api_key)["click_without_known_code"]["count"] == 1

    def test_a_replaced_key(self, api_client, program, link):
        old = program.raw_api_key
        current = program_key_regenerate(program=program, mode=ProgramKey.Mode.LIVE)
        self.refused(api_client, old, "https://shop.example.com/?aff=typo")
        row = ApiCall.objects.get(route="track-click")
        assert (row.program_id, row.key_masked) == (program.pk, f"replaced key ending …{old[-4:]}")
        found = mistakes(api_client, program, current)
        assert found["click_without_known_code"]["count"] == 1
        assert found["retired_key_used"]["count"] == 1

    def test_a_key_of_no_program_names_none(self, api_client, program, link):
        self.refused(api_client, "aff_" + "x" * 40, "https://shop.example.com/?aff=typo")
        assert ApiCall.objects.get(route="track-click").program_id is None
        assert "click_without_known_code" not in mistakes(api_client, program)


class TestTrackerMisconfigurations:
    def test_no_valid_program_id_no_longer_hides_another_domain(self, api_client, program):
        for _ in range(2):
            refused = api_client.post(VISIT, {"page_url": "https://www.shop.example.com/pricing"}, format="json")
            assert refused.status_code == 400
        elsewhere = {"program_id": program.pk, "page_url": "https://staging.other.test/signup"}
        assert api_client.post(VISIT, elsewhere, format="json").status_code == 200

        found = mistakes(api_client, program)["tracker_misconfigured"]

        assert found["title"] == (
            "The tracker on shop.example.com sent 2 visits without a valid program id; the tracker runs on another "
            "domain (staging.other.test) than the program's (shop.example.com)"
        )
        assert found["count"] == 3 and found["severity"] == "fail"
        assert f'data-svc-program-id="{program.pk}"' in found["fix"]
        assert "Install the tracker on shop.example.com" in found["fix"]
