"""The Stripe fake through the real stripe library: module-style calls and StripeClient alike."""

import json
import threading
from pathlib import Path
from typing import Any

import pytest
import requests
import stripe

from tests.stripe_fake.events import event, signed
from tests.stripe_fake.fixtures import stripe_server  # noqa: F401  (fixture)
from tests.stripe_fake.schema import SUBSET, object_fields, subset
from tests.stripe_fake.server import StripeFake
from tests.stripe_payloads import WEBHOOK_SECRET


@pytest.fixture
def client(stripe_server: StripeFake) -> stripe.StripeClient:  # noqa: F811
    return stripe.StripeClient(stripe_server.api_key, base_addresses={"api": stripe_server.url})


@pytest.fixture
def partner_account(stripe_server: StripeFake) -> str:  # noqa: F811
    account = stripe_server.create_account(email="partner@example.com")
    stripe_server.complete_onboarding(account["id"])
    return account["id"]


def new_express_account(**extra: object) -> stripe.Account:
    return stripe.Account.create(
        type="express",
        email="partner@example.com",
        country="US",
        business_type="individual",
        capabilities={"transfers": {"requested": True}},
        metadata={"partner_id": "7"},
        **extra,  # type: ignore[arg-type]
    )


def pay(destination: str, amount: int = 1500, **extra: object) -> stripe.Transfer:
    params = {"transfer_group": "payout_5", "metadata": {"payout_id": "5"}, **extra}
    return stripe.Transfer.create(amount=amount, currency="usd", destination=destination, **params)  # type: ignore[arg-type]


def assert_stripe_shape(obj: dict[str, Any], name: str) -> None:
    assert set(obj) <= object_fields(name), set(obj) - object_fields(name)
    assert set(subset()["objects"][name]["required"]) <= set(obj)


class TestAccounts:
    def test_an_express_account_waits_for_onboarding(self, stripe_server: StripeFake) -> None:  # noqa: F811
        account = new_express_account()

        assert account.id.startswith("acct_")
        assert (account.object, account.type, account.email, account.country) == (
            "account",
            "express",
            "partner@example.com",
            "US",
        )
        fields = account.to_dict()
        assert fields["capabilities"] == {"transfers": "inactive"}
        assert (account.charges_enabled, account.payouts_enabled, account.details_submitted) == (False, False, False)
        assert fields["requirements"]["currently_due"] and fields["requirements"]["disabled_reason"]
        assert fields["metadata"] == {"partner_id": "7"}
        assert_stripe_shape(stripe_server.account(account.id), "account")

    def test_retrieve_after_onboarding_and_update_metadata(self, stripe_server: StripeFake) -> None:  # noqa: F811
        account = new_express_account()
        stripe_server.complete_onboarding(account.id)

        again = stripe.Account.retrieve(account.id).to_dict()
        assert again["capabilities"]["transfers"] == "active"
        assert (again["payouts_enabled"], again["details_submitted"]) == (True, True)
        assert again["requirements"]["currently_due"] == []

        updated = stripe.Account.modify(account.id, metadata={"partner_id": "", "program": "shop"})
        assert updated.to_dict()["metadata"] == {"program": "shop"}

    def test_set_account_state(self, stripe_server: StripeFake) -> None:  # noqa: F811
        account = new_express_account()
        stripe_server.set_account(account.id, transfers="pending", currently_due=["individual.verification.document"])

        again = stripe.Account.retrieve(account.id).to_dict()
        assert again["capabilities"]["transfers"] == "pending"
        assert again["requirements"]["currently_due"] == ["individual.verification.document"]

    def test_unknown_account_is_404(self, stripe_server: StripeFake) -> None:  # noqa: F811
        with pytest.raises(stripe.InvalidRequestError) as raised:
            stripe.Account.retrieve("acct_1Missing")
        assert (raised.value.http_status, raised.value.code) == (404, "resource_missing")
        assert raised.value.user_message == "No such account: 'acct_1Missing'"


class TestAccountLinks:
    def test_visiting_the_link_completes_onboarding_and_returns(self, stripe_server: StripeFake) -> None:  # noqa: F811
        account = new_express_account()
        link = stripe.AccountLink.create(
            account=account.id,
            refresh_url="https://track.example.test/payouts/refresh",
            return_url="https://track.example.test/payouts/return",
            type="account_onboarding",
        )

        assert link.object == "account_link"
        assert link.url.startswith(f"{stripe_server.url}/onboarding/{account.id}?")
        assert link.expires_at > link.created
        assert_stripe_shape(link.to_dict(), "account_link")
        first = requests.get(link.url, allow_redirects=False, timeout=5)
        assert (first.status_code, first.headers["Location"]) == (302, "https://track.example.test/payouts/return")
        assert stripe.Account.retrieve(account.id).payouts_enabled is True
        # A link works once; Stripe sends a second visit to refresh_url for a new link.
        second = requests.get(link.url, allow_redirects=False, timeout=5)
        assert second.headers["Location"] == "https://track.example.test/payouts/refresh"

    def test_link_for_unknown_account(self, stripe_server: StripeFake) -> None:  # noqa: F811
        with pytest.raises(stripe.InvalidRequestError) as raised:
            stripe.AccountLink.create(account="acct_1Missing", type="account_onboarding")
        assert (raised.value.http_status, raised.value.code, raised.value.param) == (400, "resource_missing", "account")


class TestTransfers:
    def test_create_retrieve_list_by_group(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        transfer = pay(partner_account, description="Payout 5")

        assert transfer.id.startswith("tr_")
        assert (transfer.object, transfer.amount, transfer.currency, transfer.destination) == (
            "transfer",
            1500,
            "usd",
            partner_account,
        )
        assert (transfer.transfer_group, transfer.to_dict()["metadata"]) == ("payout_5", {"payout_id": "5"})
        assert (transfer.reversed, transfer.amount_reversed, transfer.livemode) == (False, 0, False)
        assert stripe.Transfer.retrieve(transfer.id).id == transfer.id
        pay(partner_account, amount=200, transfer_group="payout_6")

        listed = stripe.Transfer.list(transfer_group="payout_5", limit=10)
        assert (listed.to_dict()["object"], listed.url, listed.has_more) == ("list", "/v1/transfers", False)
        assert [item.id for item in listed.data] == [transfer.id]
        assert_stripe_shape(stripe_server.transfers[0], "transfer")

    def test_list_pages_newest_first(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        made = [pay(partner_account, amount=100 + n).id for n in range(5)]

        page = stripe.Transfer.list(transfer_group="payout_5", limit=2)
        assert page.has_more is True
        assert [item.id for item in page.auto_paging_iter()] == made[::-1]

    def test_reversals(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        transfer = pay(partner_account)
        balance_after_transfer = stripe_server.balance["usd"]

        partial = stripe.Transfer.create_reversal(transfer.id, amount=500)
        assert (partial.object, partial.amount, partial.transfer) == ("transfer_reversal", 500, transfer.id)
        assert_stripe_shape(partial.to_dict(), "transfer_reversal")
        after_partial = stripe.Transfer.retrieve(transfer.id)
        assert (after_partial.amount_reversed, after_partial.reversed) == (500, False)

        stripe.Transfer.create_reversal(transfer.id)  # the rest
        after_full = stripe.Transfer.retrieve(transfer.id)
        assert (after_full.amount_reversed, after_full.reversed) == (1500, True)
        assert stripe_server.balance["usd"] == balance_after_transfer + 1500
        with pytest.raises(stripe.InvalidRequestError) as raised:
            stripe.Transfer.create_reversal(transfer.id, amount=1)
        assert raised.value.param == "amount"

    def test_through_stripe_client(self, client: stripe.StripeClient, partner_account: str) -> None:
        transfer = client.v1.transfers.create(
            params={"amount": 700, "currency": "eur", "destination": partner_account, "transfer_group": "payout_9"},
            options={"idempotency_key": "payout-9"},
        )

        listed = client.v1.transfers.list(params={"transfer_group": "payout_9"})
        assert [item.id for item in listed.data] == [transfer.id]
        reversal = client.v1.transfers.reversals.create(transfer.id, params={"amount": 700})
        assert client.v1.transfers.retrieve(transfer.id).reversed is True
        assert reversal.amount == 700

    def test_balance(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        stripe_server.set_balance("usd", 10_000)
        pay(partner_account, amount=2500)

        balance = stripe.Balance.retrieve()
        assert {funds.currency: funds.amount for funds in balance.available}["usd"] == 7500
        assert_stripe_shape(balance.to_dict(), "balance")


class TestTransferErrors:
    def test_unknown_destination(self, stripe_server: StripeFake) -> None:  # noqa: F811
        with pytest.raises(stripe.InvalidRequestError) as raised:
            pay("acct_1Missing")
        error = raised.value
        assert (error.http_status, error.code, error.param) == (400, "resource_missing", "destination")
        assert error.user_message == "No such destination: 'acct_1Missing'"

    def test_transfers_capability_not_active(self, stripe_server: StripeFake) -> None:  # noqa: F811
        account = new_express_account()

        with pytest.raises(stripe.InvalidRequestError) as raised:
            pay(account.id)
        assert raised.value.code == "insufficient_capabilities_for_transfer"
        assert stripe_server.transfers == []

    def test_balance_too_low(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        stripe_server.set_balance("usd", 1000)

        with pytest.raises(stripe.InvalidRequestError) as raised:
            pay(partner_account, amount=1001)
        assert (raised.value.http_status, raised.value.code) == (400, "balance_insufficient")
        assert raised.value.error is not None and raised.value.error.type == "invalid_request_error"

    def test_unknown_transfer_is_404(self, stripe_server: StripeFake) -> None:  # noqa: F811
        with pytest.raises(stripe.InvalidRequestError) as raised:
            stripe.Transfer.retrieve("tr_1Missing")
        assert (raised.value.http_status, raised.value.code, raised.value.param) == (404, "resource_missing", "id")


class TestParameters:
    def test_unknown_parameter(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        with pytest.raises(stripe.InvalidRequestError) as raised:
            pay(partner_account, payout="5")
        error = raised.value
        assert (error.http_status, error.code, error.param) == (400, "parameter_unknown", "payout")
        assert error.user_message == "Received unknown parameter: payout"

    def test_unknown_nested_parameter(self, stripe_server: StripeFake) -> None:  # noqa: F811
        with pytest.raises(stripe.InvalidRequestError) as raised:
            stripe.Account.create(
                type="express",
                capabilities={"transfers": {"wanted": True}},  # type: ignore[typeddict-unknown-key]
            )
        assert raised.value.param == "capabilities[transfers][wanted]"

    def test_missing_required(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        with pytest.raises(stripe.InvalidRequestError) as raised:
            stripe.Transfer.create(amount=100, destination=partner_account)  # type: ignore[call-arg]
        assert (raised.value.code, raised.value.param) == ("parameter_missing", "currency")
        assert raised.value.user_message == "Missing required param: currency."

    def test_wrong_type_and_enum(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        with pytest.raises(stripe.InvalidRequestError) as raised:
            pay(partner_account, amount="12.50")  # type: ignore[arg-type]
        assert (raised.value.code, raised.value.param) == ("parameter_invalid_integer", "amount")
        with pytest.raises(stripe.InvalidRequestError) as raised:
            stripe.Account.create(type="premium")
        assert raised.value.param == "type"
        assert raised.value.user_message == "Invalid type: must be one of custom, express, or standard"

    def test_expand_is_accepted(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        transfer = pay(partner_account, expand=["destination"])
        assert stripe.Transfer.retrieve(transfer.id, expand=["balance_transaction"]).id == transfer.id

    def test_bracket_form_as_sent_by_hand(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        answer = requests.post(
            f"{stripe_server.url}/v1/transfers",
            data=f"amount=300&currency=usd&destination={partner_account}&metadata[payout_id]=5&expand[]=destination",
            headers={
                "Authorization": f"Bearer {stripe_server.api_key}",
                "Content-Type": "application/x-www-form-urlencoded",
            },
            timeout=5,
        )
        assert answer.status_code == 200
        assert answer.json()["metadata"] == {"payout_id": "5"}


class TestAuthentication:
    def test_wrong_key(self, stripe_server: StripeFake) -> None:  # noqa: F811
        with pytest.raises(stripe.AuthenticationError) as raised:
            stripe.Balance.retrieve(api_key="sk_test_someone_else")
        assert raised.value.http_status == 401

    def test_no_key(self, stripe_server: StripeFake) -> None:  # noqa: F811
        answer = requests.get(f"{stripe_server.url}/v1/balance", timeout=5)
        assert answer.status_code == 401
        assert answer.json()["error"]["type"] == "invalid_request_error"
        assert "You did not provide an API key" in answer.json()["error"]["message"]


class TestIdempotency:
    def test_same_key_same_parameters_replays(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        first = pay(partner_account, idempotency_key="payout-5")
        second = pay(partner_account, idempotency_key="payout-5")

        assert second.id == first.id
        assert len(stripe_server.transfers) == 1
        assert first.last_response is not None and second.last_response is not None
        assert "idempotent-replayed" not in first.last_response.headers
        assert second.last_response.headers["idempotent-replayed"] == "true"

    def test_same_key_other_parameters(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        pay(partner_account, idempotency_key="payout-5")

        with pytest.raises(stripe.IdempotencyError) as raised:
            pay(partner_account, amount=9999, idempotency_key="payout-5")
        assert raised.value.http_status == 400
        assert raised.value.error is not None and raised.value.error.type == "idempotency_error"
        assert len(stripe_server.transfers) == 1

    def test_errors_are_replayed(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        stripe_server.set_balance("usd", 0)
        for _ in range(2):
            with pytest.raises(stripe.InvalidRequestError):
                pay(partner_account, idempotency_key="payout-5")
        stripe_server.set_balance("usd", 10_000)
        # Stripe saved the first answer, the error: the same key keeps answering it.
        with pytest.raises(stripe.InvalidRequestError) as raised:
            pay(partner_account, idempotency_key="payout-5")
        assert raised.value.code == "balance_insufficient"

    def test_a_request_failing_validation_is_not_saved(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        with pytest.raises(stripe.InvalidRequestError):
            pay(partner_account, payout="5", idempotency_key="payout-5")
        assert pay(partner_account, idempotency_key="payout-5").amount == 1500

    def test_keys_belong_to_one_api_key(self) -> None:
        with StripeFake(api_keys=("sk_test_platform_a", "sk_test_platform_b")) as server:
            destination = server.create_account()["id"]
            server.complete_onboarding(destination)
            for key in ("sk_test_platform_a", "sk_test_platform_b"):
                client = stripe.StripeClient(key, base_addresses={"api": server.url})
                client.v1.transfers.create(
                    params={"amount": 100, "currency": "usd", "destination": destination},
                    options={"idempotency_key": "payout-5"},
                )
            assert len(server.transfers) == 2


class TestFaults:
    def test_fail_next_transfers(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        stripe_server.fail_next_transfers(2, code="account_invalid", message="The account is closed.")

        for _ in range(2):
            with pytest.raises(stripe.InvalidRequestError) as raised:
                pay(partner_account)
            assert (raised.value.code, raised.value.user_message) == ("account_invalid", "The account is closed.")
        assert pay(partner_account).amount == 1500

    def test_fail_with_server_error(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        stripe_server.fail_next_transfers(1, code="processing_error", status=500)

        with pytest.raises(stripe.APIError):
            pay(partner_account)
        assert stripe_server.transfers == []

    def test_fail_every_transfer_to_one_destination(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        other = stripe_server.create_account()
        stripe_server.complete_onboarding(other["id"])
        stripe_server.fail_transfers_to(partner_account, code="account_invalid")

        for _ in range(2):
            with pytest.raises(stripe.InvalidRequestError):
                pay(partner_account)
        pay(other["id"])
        stripe_server.heal_transfers_to(partner_account)
        pay(partner_account)
        assert [transfer["destination"] for transfer in stripe_server.transfers] == [other["id"], partner_account]

    def test_crash_after_the_transfer_is_made(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        stripe_server.crash_next_transfers(1)

        with pytest.raises(stripe.APIConnectionError):
            pay(partner_account, idempotency_key="payout-5")
        # The transfer exists: reconciling by transfer_group finds it, and a retry under the same key replays it.
        [made] = stripe.Transfer.list(transfer_group="payout_5").data
        assert stripe_server.transfers_with_metadata("payout_id", "5") == [made.to_dict()]
        assert pay(partner_account, idempotency_key="payout-5").id == made.id
        assert len(stripe_server.transfers) == 1
        assert [(r.dropped, r.replayed) for r in stripe_server.requests if r.method == "POST"] == [
            (True, False),
            (False, True),
        ]

    def test_library_retries_recover_a_lost_answer(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        stripe.max_network_retries = 2  # the fixture restores it
        stripe_server.crash_next_transfers(1)

        transfer = pay(partner_account)
        assert stripe_server.transfers_in_group("payout_5")[0]["id"] == transfer.id
        assert len(stripe_server.transfers) == 1


class TestThreads:
    def test_distinct_keys_make_one_transfer_each(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        stripe_server.set_balance("usd", 20 * 100)
        made: list[str] = []

        def send(n: int) -> None:
            made.append(pay(partner_account, amount=100, idempotency_key=f"payout-{n}").id)

        run_together([threading.Thread(target=send, args=(n,)) for n in range(20)])
        assert len(set(made)) == len(stripe_server.transfers) == 20
        assert stripe_server.balance["usd"] == 0

    def test_one_key_makes_one_transfer(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        made: list[str] = []

        def send() -> None:
            made.append(pay(partner_account, idempotency_key="payout-5").id)

        run_together([threading.Thread(target=send) for _ in range(20)])
        assert len(made) == 20 and len(set(made)) == 1
        assert len(stripe_server.transfers_in_group("payout_5")) == 1


def run_together(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)


class TestEvents:
    def test_signed_connect_event_verifies_with_stripe(self, stripe_server: StripeFake, partner_account: str) -> None:  # noqa: F811
        body, header = signed(event("account.updated", stripe_server.account(partner_account), account=partner_account))

        verified = stripe.Webhook.construct_event(body, header, WEBHOOK_SECRET)
        assert (verified.type, verified.account, verified.livemode) == ("account.updated", partner_account, False)
        assert verified.data.object["payouts_enabled"] is True
        assert verified.id.startswith("evt_")


class TestOpenAPISubset:
    def test_small_and_sourced(self) -> None:
        assert Path(SUBSET).stat().st_size < 300_000
        source = json.loads(Path(SUBSET).read_text())["source"]
        assert source["repository"] == "stripe/openapi" and len(source["commit"]) == 40 and source["spec_version"]

    @pytest.mark.parametrize(
        ("operation", "params"),
        [
            ("POST /v1/transfers", stripe.params.TransferCreateParams),
            ("GET /v1/transfers", stripe.params.TransferListParams),
            ("POST /v1/transfers/{id}/reversals", stripe.params.TransferCreateReversalParams),
            ("POST /v1/coupons", stripe.params.CouponCreateParams),
            ("POST /v1/promotion_codes", stripe.params.PromotionCodeCreateParams),
            ("GET /v1/invoices/{invoice}", stripe.params.InvoiceRetrieveParams),
            ("GET /v1/promotion_codes/{promotion_code}", stripe.params.PromotionCodeRetrieveParams),
            ("GET /v1/checkout/sessions/{session}", stripe.params.checkout.SessionRetrieveParams),
        ],
    )
    def test_the_library_sends_no_transfer_parameter_the_subset_lacks(self, operation: str, params: type) -> None:
        """The subset is cut from an older description than the library's API version: for the transfer calls the
        payouts make, every parameter the installed library knows must be one the fake accepts."""
        known = {name for cls in params.__mro__ for name in getattr(cls, "__annotations__", {})}
        options = set(stripe.RequestOptions.__annotations__)
        description = subset()["operations"][operation]
        accepted = set(
            description["form"].get("properties", {}) if operation.startswith("POST") else description["query"]
        )
        assert known - options <= accepted

    def test_every_route_has_its_operation(self) -> None:
        from tests.stripe_fake.server import ROUTES

        assert {operation for _, _, operation, _ in ROUTES} == set(subset()["operations"])


class TestCouponsAndPromotionCodes:
    """Coupons and promotion codes on a connected account (Stripe-Account), as groups.stripe_codes makes them."""

    @staticmethod
    def connected(stripe_server: StripeFake) -> str:  # noqa: F811
        return stripe_server.create_account()["id"]

    def test_a_promotion_code_for_a_coupon_on_the_connected_account(self, stripe_server: StripeFake) -> None:  # noqa: F811
        account = self.connected(stripe_server)
        coupon = stripe.Coupon.create(
            duration="repeating", duration_in_months=3, percent_off=10, stripe_account=account
        )
        promotion = stripe.PromotionCode.create(
            promotion={"type": "coupon", "coupon": coupon.id}, code="JANE20", stripe_account=account
        )
        assert_stripe_shape(coupon.to_dict(), "coupon")
        assert_stripe_shape(promotion.to_dict(), "promotion_code")
        assert (coupon.percent_off, coupon.duration_in_months, promotion.code) == (10.0, 3, "JANE20")
        assert promotion.promotion.coupon == coupon.id and promotion.active
        # Kept on that account, not the platform's.
        assert [p["id"] for p in stripe_server.promotion_codes_on(account)] == [promotion.id]
        assert stripe_server.promotion_codes_on() == []
        assert stripe.PromotionCode.retrieve(promotion.id, stripe_account=account).code == "JANE20"
        with pytest.raises(stripe.InvalidRequestError):
            stripe.PromotionCode.retrieve(promotion.id)

    def test_a_code_is_unique_among_active_codes_whatever_its_case(self, stripe_server: StripeFake) -> None:  # noqa: F811
        account = self.connected(stripe_server)
        coupon = stripe.Coupon.create(duration="once", amount_off=500, currency="usd", stripe_account=account)
        stripe.PromotionCode.create(
            promotion={"type": "coupon", "coupon": coupon.id}, code="BOB10", stripe_account=account
        )
        with pytest.raises(stripe.InvalidRequestError) as taken:
            stripe.PromotionCode.create(
                promotion={"type": "coupon", "coupon": coupon.id}, code="bob10", stripe_account=account
            )
        assert taken.value.code == "resource_already_exists"

    def test_the_coupon_must_exist_and_the_old_coupon_parameter_is_unknown(self, stripe_server: StripeFake) -> None:  # noqa: F811
        account = self.connected(stripe_server)
        with pytest.raises(stripe.InvalidRequestError) as unknown_coupon:
            stripe.PromotionCode.create(promotion={"type": "coupon", "coupon": "NOPE"}, stripe_account=account)
        assert unknown_coupon.value.code == "resource_missing"
        with pytest.raises(stripe.InvalidRequestError) as old_parameter:
            stripe.PromotionCode.create(coupon="NOPE", stripe_account=account)  # type: ignore[call-arg]
        assert old_parameter.value.code == "parameter_unknown"

    def test_an_account_the_platform_cannot_reach_is_refused(self, stripe_server: StripeFake) -> None:  # noqa: F811
        with pytest.raises(stripe.PermissionError):
            stripe.Coupon.create(duration="once", percent_off=10, stripe_account="acct_1Revoked")

    def test_a_lost_answer_is_replayed_for_the_same_idempotency_key(self, stripe_server: StripeFake) -> None:  # noqa: F811
        account = self.connected(stripe_server)
        coupon = stripe.Coupon.create(duration="once", percent_off=10, stripe_account=account)
        stripe_server.crash_next("POST /v1/promotion_codes")
        params = {"promotion": {"type": "coupon", "coupon": coupon.id}, "code": "ANN5", "stripe_account": account}
        with pytest.raises(stripe.APIConnectionError):
            stripe.PromotionCode.create(idempotency_key="k1", **params)  # type: ignore[arg-type]
        again = stripe.PromotionCode.create(idempotency_key="k1", **params)  # type: ignore[arg-type]
        assert [p["id"] for p in stripe_server.promotion_codes_on(account)] == [again.id]

    def test_an_invoice_answers_its_discounts_expanded_when_asked(self, stripe_server: StripeFake) -> None:  # noqa: F811
        account = self.connected(stripe_server)
        promotion = stripe_server.promotion_code_make(account, "JANE20")
        discount = stripe_server.discount_make(account, promotion["id"], invoice="in_1Fake")
        assert_stripe_shape(discount, "discount")
        stripe_server.invoice_store(account, {"id": "in_1Fake", "object": "invoice", "discounts": [discount["id"]]})
        plain = stripe.Invoice.retrieve("in_1Fake", stripe_account=account)
        assert plain.discounts == [discount["id"]]
        expanded = stripe.Invoice.retrieve(
            "in_1Fake", expand=["discounts", "discounts.promotion_code"], stripe_account=account
        ).to_dict()
        assert expanded["discounts"][0]["id"] == discount["id"]
        assert expanded["discounts"][0]["promotion_code"]["code"] == "JANE20"
