"""insight.explain names the fraud rule that decided something: a click recorded as a duplicate, a bot or a
prefetch (the last two never attributed, explained as the click alone), a click flagged paid_ads, and a held
commission with its reason, what the owner can do and its review history. Clicks and sales are made over HTTP."""

import pytest

from commissions.models import Commission
from commissions.services import commission_hold, commission_release, commission_void
from core.errors import NotFoundError
from fraud.config import rule_update
from fraud.rules import SPECS
from insight.explain import NEVER_ATTRIBUTED, customer_explain, sale_explain
from programs.models import Role
from tests.factories import CustomerFactory, MembershipFactory
from tests.helpers import bearer
from tests.tracking.sales import REFUND_URL, post_sale, sale_body
from tracking.models import ClickEvent, Customer

pytestmark = pytest.mark.django_db

CLICK_URL = "/api/v1/track/click"
LEAD_URL = "/api/v1/track/lead"
CHROME_UA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
)
GOOGLEBOT_UA = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def click(api_client, link, *, user_agent: str = CHROME_UA, query: str = "", **extra) -> str:
    url = f"https://shop.example.com/pricing?aff={link.short_link}{query}"
    response = api_client.post(
        CLICK_URL, {"affiliate_url": url}, format="json", HTTP_USER_AGENT=user_agent, REMOTE_ADDR="81.2.69.160", **extra
    )
    assert response.status_code == 200, response.content
    return ClickEvent.objects.latest("pk").click_id


class TestClicks:
    def test_a_duplicate_click_names_the_rule_and_its_window(self, api_client, program, link):
        click(api_client, link)
        duplicate_id = click(api_client, link)
        assert ClickEvent.objects.get(click_id=duplicate_id).traffic == "duplicate"

        explained = customer_explain(program=program, click_id=duplicate_id)

        [recent] = explained["clicks"]["recent"]
        assert (recent["traffic"], recent["flags"]) == ("duplicate", [])
        [step] = explained["rules"]
        assert step == {
            "rule": "duplicate_click",
            "description": SPECS["duplicate_click"].description,
            "status": "not_counted",
            "text": "duplicate_click: the same visitor clicked this link within 60 minutes; recorded, not counted",
        }
        assert (explained["clicks"]["count"], explained["clicks"]["counted"]) == (1, 0)

    def test_the_window_named_is_the_programs_setting(self, api_client, program, link):
        rule_update(program_id=program.pk, rule="duplicate_click", window_minutes=15)
        click(api_client, link)
        duplicate_id = click(api_client, link)

        [step] = customer_explain(program=program, click_id=duplicate_id)["rules"]

        assert "within 15 minutes" in step["text"]

    def test_a_counted_click_names_no_rule(self, api_client, program, link):
        click_id = click(api_client, link)

        explained = customer_explain(program=program, click_id=click_id)

        assert explained["rules"] == [] and explained["clicks"]["recent"][0]["rules"] == []
        assert (explained["clicks"]["count"], explained["clicks"]["counted"]) == (1, 1)

    def test_a_bots_click_is_explained_alone_and_never_attributes(self, api_client, program, link):
        bot_id = click(api_client, link, user_agent=GOOGLEBOT_UA)
        assert not Customer.objects.filter(click_id=bot_id).exists()

        explained = customer_explain(program=program, click_id=bot_id)

        assert (explained["kind"], explained["outcome"], explained["attributed"]) == ("click", "bot", False)
        assert [(step["rule"], step["status"]) for step in explained["rules"]] == [("bot", "never_attributed")]
        assert explained["rules"][0]["description"] == SPECS["bot"].description
        assert explained["summary"].startswith("bot: a crawler's user agent; recorded, never counted")
        assert explained["summary"].endswith(NEVER_ATTRIBUTED)
        assert explained["link"] == {"id": link.pk, "short_link": link.short_link}
        # ... and indeed a lead with that click id attributes nothing.
        api_client.post(LEAD_URL, {"click_id": bot_id, "customer_key": "u1"}, format="json")
        assert not Customer.objects.filter(customer_key="u1").exists()

    def test_a_prefetch_is_named_as_one(self, api_client, program, link):
        prefetch_id = click(api_client, link, HTTP_SEC_PURPOSE="prefetch")

        explained = customer_explain(program=program, click_id=prefetch_id)

        assert (explained["kind"], explained["traffic"]) == ("click", "prefetch")
        assert explained["rules"][0]["text"].startswith("bot: a HEAD or prefetch request")

    def test_a_paid_ad_click_is_flagged_on_the_customer_and_on_its_sales_click(self, api_client, program, link):
        rule_update(program_id=program.pk, rule="paid_ads", enabled=True, action="flag")
        click_id = click(api_client, link, query="&gclid=abc")

        explained = customer_explain(program=program, click_id=click_id)

        assert explained["clicks"]["recent"][0]["flags"] == ["paid_ads"]
        assert [(step["rule"], step["status"]) for step in explained["rules"]] == [("paid_ads", "flagged")]
        assert explained["rules"][0]["text"].startswith("paid_ads: an ad network's click id was in the landing URL")
        # A counted click all the same.
        assert explained["clicks"]["counted"] == 1

        body = {"transaction_id": "ad_1", "amount_cents": 5000, "click_id": click_id}
        assert post_sale(api_client, program, **body).status_code == 200
        sale = sale_explain(program=program, transaction_id="ad_1")
        assert [step["rule"] for step in sale["attribution"]["click"]["rules"]] == ["paid_ads"]
        review = sale["review"]
        assert review["held"] is False and review["flags"] == ["paid_ads"]
        assert [(step["rule"], step["status"]) for step in review["rules"]] == [("paid_ads", "flagged")]
        assert review["text"] == "Flagged by paid_ads, not held: paid as usual."

    def test_an_unknown_click_id_is_still_not_found(self, program):
        with pytest.raises(NotFoundError):
            customer_explain(program=program, click_id="cust_nobody")


class TestAHeldCommission:
    @pytest.fixture
    def held(self, api_client, program, link):
        CustomerFactory(link=link, customer_key="user_1", email="buyer@mailinator.com")
        assert post_sale(api_client, program, **sale_body()).status_code == 200
        commission = Commission.objects.get()
        assert (commission.hold_rule, commission.held_at is not None) == ("self_referral", True)
        return commission

    def test_the_rule_its_reason_what_to_do_and_the_history(self, program, held):
        explained = sale_explain(program=program, transaction_id="txn_1")

        review = explained["review"]
        assert (review["held"], review["hold_rule"], review["flags"]) == (True, "self_referral", ["self_referral"])
        assert review["hold_reason"] == (
            "self_referral: the customer's email domain mailinator.com is a disposable one"
        )
        [step] = review["rules"]
        assert step == {
            "rule": "self_referral",
            "description": SPECS["self_referral"].description,
            "status": "held",
            "text": "self_referral: the customer's email domain mailinator.com is a disposable one",
        }
        assert "Review tab" in review["actions"]
        assert f"/api/agent/v1/commissions/{held.pk}/release" in review["actions"]
        assert review["text"].startswith("On hold by the rule self_referral: the customer's email domain")
        assert [(entry["action"], entry["rule"], entry["actor"]) for entry in review["history"]] == [
            ("held", "self_referral", "rule")
        ]
        # The verdict says so too.
        assert explained["outcome"] == "commission"
        assert "On hold by the rule self_referral" in explained["summary"]

        by_customer = customer_explain(program=program, customer_key="user_1")
        [sale] = by_customer["sales"]
        assert (sale["commission"]["held"], sale["commission"]["hold_rule"]) == (True, "self_referral")

    def test_after_release_the_history_says_who_released_it(self, program, held):
        commission_release(commission_id=held.pk, actor="user:alice")

        review = sale_explain(program=program, transaction_id="txn_1")["review"]

        assert review["held"] is False and review["actions"] == ""
        [step] = review["rules"]
        assert (step["rule"], step["status"]) == ("self_referral", "released")
        assert step["text"] == (
            "self_referral: the customer's email domain mailinator.com is a disposable one; released by user:alice"
        )
        assert review["text"] == f"Was held by {step['text']}."
        assert [(entry["action"], entry["actor"]) for entry in review["history"]] == [
            ("held", "rule"),
            ("released", "user:alice"),
        ]

    def test_an_owner_holding_it_again_keeps_the_rule_and_both_reasons_are_said(self, program, held):
        commission_hold(commission_id=held.pk, reason="asked the partner", actor="user:bob")

        review = sale_explain(program=program, transaction_id="txn_1")["review"]

        assert (review["held"], review["hold_rule"]) == (True, "self_referral")
        assert review["rules"][0]["text"].endswith("is a disposable one")
        assert review["text"].startswith(
            "On hold by the rule self_referral: the customer's email domain mailinator.com is a disposable one; "
            "the owner's reason: asked the partner. Release it"
        )
        assert [(entry["action"], entry["actor"]) for entry in review["history"]] == [
            ("held", "rule"),
            ("held", "user:bob"),
        ]

    def test_a_voided_one_says_so(self, program, held):
        commission_void(commission_id=held.pk, reason="self-referral confirmed", actor="user:alice")

        review = sale_explain(program=program, transaction_id="txn_1")["review"]

        assert review["text"] == "Voided: self-referral confirmed."
        assert review["rules"][0]["status"] == "voided"

    def test_a_refund_ends_the_hold_and_the_explanation_says_so(self, api_client, program, held):
        body = {"transaction_id": "txn_1", "refund_amount_cents": 10000, "refund_id": "re_1"}
        assert api_client.post(REFUND_URL, body, format="json", **bearer(program.raw_api_key)).status_code == 200

        review = sale_explain(program=program, transaction_id="txn_1")["review"]

        assert review["held"] is False
        [step] = review["rules"]
        assert step["status"] == "ended"
        assert step["text"].endswith("; ended by refund: the sale was refunded (100.00 USD)")

    def test_over_http_the_dashboard_route_and_the_cli_route_return_it(self, api_client, program, held):
        cli = api_client.get("/api/v1/cli/explain", {"transaction_id": "txn_1"}, **bearer(program.raw_api_key))
        assert cli.status_code == 200
        assert cli.json()["data"]["review"]["hold_rule"] == "self_referral"
        api_client.force_login(MembershipFactory(workspace=program.workspace, role=Role.OWNER).user)
        dashboard = api_client.get(f"/api/tracking/explain/{program.pk}", {"transaction_id": "txn_1"})
        assert dashboard.json() == cli.json()
        assert dashboard.json()["data"]["review"]["history"][0]["created_at"].endswith("Z")


class TestAnUnflaggedSale:
    def test_has_an_empty_review(self, api_client, program, customer):
        assert post_sale(api_client, program, **sale_body()).status_code == 200

        review = sale_explain(program=program, transaction_id="txn_1")["review"]

        assert (review["held"], review["rules"], review["history"], review["text"]) == (False, [], [], "")


def test_a_bots_click_over_the_dashboard_route(api_client, program, link):
    bot_id = click(api_client, link, user_agent=GOOGLEBOT_UA)
    api_client.force_login(MembershipFactory(workspace=program.workspace, role=Role.MEMBER).user)

    response = api_client.get(f"/api/tracking/explain/{program.pk}", {"click_id": bot_id})

    assert response.status_code == 200
    data = response.json()["data"]
    assert (data["kind"], data["attributed"], data["rules"][0]["rule"]) == ("click", False, "bot")
