"""A Stripe API of the tests' own: Connect Express accounts, account links, transfers and their reversals, and the
platform balance, kept in memory and answered over HTTP in Stripe's shape, so the real `stripe` library talks to it.

Requests are checked as Stripe checks them: the secret key (401), every parameter against Stripe's OpenAPI
description (schema.py), Idempotency-Key replays and mismatches. Tests steer it with Python methods: finish an
account's onboarding, set the balance, make transfers fail, or have one recorded and its answer lost."""

import base64
import binascii
import copy
import json
import secrets
import string
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from tests.stripe_fake.billing import PLATFORM, Billing
from tests.stripe_fake.schema import StripeError, checked, missing, parse_form

API_KEY = "sk_test_stripefake_platform"
ONBOARDING_DUE = ["business_profile.url", "external_account", "individual.first_name", "tos_acceptance.date"]


def new_id(prefix: str) -> str:
    return prefix + "_1" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(23))


def not_found(kind: str, object_id: str, param: str = "id", status: int = 404) -> StripeError:
    return StripeError(f"No such {kind}: '{object_id}'", code="resource_missing", param=param, status=status)


@dataclass
class Recorded:
    """One API request as the fake answered it."""

    method: str
    path: str
    params: dict[str, Any]
    idempotency_key: str | None
    status: int
    replayed: bool = False
    dropped: bool = False


@dataclass
class Answer:
    status: int
    body: dict[str, Any]
    # The transfer is made but the connection closes with no answer (a crash, a timeout on the client's side).
    drop: bool = False


@dataclass
class _Saved:
    """An Idempotency-Key's first request and the answer to replay."""

    method: str
    path: str
    params: dict[str, Any]
    answer: Answer


@dataclass
class _Failure:
    code: str
    message: str
    status: int = 400
    error_type: str = "invalid_request_error"

    def error(self) -> StripeError:
        return StripeError(self.message, code=self.code, status=self.status, error_type=self.error_type)


@dataclass
class _Faults:
    failures: list[_Failure] = field(default_factory=list)
    failing_destinations: dict[str, _Failure] = field(default_factory=dict)
    crashes: int = 0
    # Per "METHOD /path" (the route's pattern, e.g. "POST /v1/promotion_codes"): answers failing before the action,
    # and actions done whose answer is then lost.
    failing_routes: dict[str, list[_Failure]] = field(default_factory=dict)
    crashing_routes: dict[str, int] = field(default_factory=dict)


class StripeFake(Billing):
    def __init__(self, api_keys: tuple[str, ...] = (API_KEY,)) -> None:
        self.api_keys = set(api_keys)
        self.api_key = api_keys[0]
        self._lock = threading.Lock()
        self.accounts: dict[str, dict[str, Any]] = {}
        self._transfers: dict[str, dict[str, Any]] = {}
        self.balance: dict[str, int] = {"usd": 1_000_000_00, "eur": 1_000_000_00}
        self.requests: list[Recorded] = []
        self._links: dict[str, dict[str, Any]] = {}
        # Keyed by (secret key, account, Idempotency-Key): Stripe keeps a connected account's keys apart.
        self._idempotent: dict[tuple[str, str, str], _Saved] = {}
        self._faults = _Faults()
        self._billing_init()
        self._http: _Server | None = None
        self.url = ""

    # --- lifecycle -------------------------------------------------------------------------------------------------

    def start(self) -> "StripeFake":
        self._http = _Server(("127.0.0.1", 0), _handler_for(self))
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        # A short poll interval: stop() (which waits for the serving loop to notice) takes milliseconds.
        serving = threading.Thread(target=self._http.serve_forever, args=(0.01,), name="stripe-fake", daemon=True)
        serving.start()
        return self

    def stop(self) -> None:
        if self._http:
            self._http.shutdown()
            self._http.server_close()
            self._http = None

    def __enter__(self) -> "StripeFake":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- test controls ---------------------------------------------------------------------------------------------

    def create_account(self, **fields: Any) -> dict[str, Any]:
        """An Express account as POST /v1/accounts makes it (transfers requested, onboarding not done)."""
        with self._lock:
            account = self._new_account({"type": "express", "capabilities": {"transfers": {"requested": True}}})
            self._update_account(account, fields)
            return account

    def account(self, account_id: str) -> dict[str, Any]:
        with self._lock:
            return json.loads(json.dumps(self.accounts[account_id]))

    def set_account(self, account_id: str, **fields: Any) -> None:
        """Sets fields of the account as Stripe would after onboarding steps: payouts_enabled, charges_enabled,
        details_submitted, transfers ("active"/"inactive"/"pending"), currently_due (list), disabled_reason."""
        with self._lock:
            self._update_account(self.accounts[account_id], fields)

    def complete_onboarding(self, account_id: str) -> None:
        self.set_account(
            account_id,
            details_submitted=True,
            charges_enabled=True,
            payouts_enabled=True,
            transfers="active",
            currently_due=[],
            disabled_reason=None,
        )

    def set_balance(self, currency: str, amount: int) -> None:
        """The platform's available balance in that currency (transfers draw on it, reversals refill it)."""
        with self._lock:
            self.balance[currency.lower()] = amount

    def fail_next_transfers(
        self, n: int = 1, *, code: str = "balance_insufficient", message: str = "", status: int = 400
    ) -> None:
        """The next n transfer creations answer this error (a 5xx as api_error) and make nothing."""
        failure = _Failure(
            code,
            message or f"Transfer failed ({code}).",
            status,
            "api_error" if status >= 500 else "invalid_request_error",
        )
        with self._lock:
            self._faults.failures.extend([failure] * n)

    def fail_transfers_to(self, destination: str, *, code: str = "account_invalid", message: str = "") -> None:
        """Every transfer to that account fails with this error until `heal_transfers_to`."""
        with self._lock:
            self._faults.failing_destinations[destination] = _Failure(code, message or f"Transfer failed ({code}).")

    def heal_transfers_to(self, destination: str) -> None:
        with self._lock:
            self._faults.failing_destinations.pop(destination, None)

    def crash_next_transfers(self, n: int = 1) -> None:
        """The next n transfer creations are made (and saved for their Idempotency-Key), then the connection closes
        without an answer: the client sees a network error for a transfer that exists."""
        with self._lock:
            self._faults.crashes += n

    def fail_next(
        self, route: str, n: int = 1, *, status: int = 500, code: str = "", message: str = "An unknown error occurred"
    ) -> None:
        """The next n requests to `route` ("POST /v1/promotion_codes") answer this error and do nothing (a 5xx as
        api_error, a 4xx as invalid_request_error). Not saved for their Idempotency-Key, as Stripe saves no 5xx."""
        failure = _Failure(code, message, status, "api_error" if status >= 500 else "invalid_request_error")
        with self._lock:
            self._faults.failing_routes.setdefault(route, []).extend([failure] * n)

    def crash_next(self, route: str, n: int = 1) -> None:
        """The next n requests to `route` are done (and saved for their Idempotency-Key), then the connection closes
        without an answer: the client sees a network error for an object that exists."""
        with self._lock:
            self._faults.crashing_routes[route] = self._faults.crashing_routes.get(route, 0) + n

    @property
    def transfers(self) -> list[dict[str, Any]]:
        """Every transfer made, oldest first (copies)."""
        with self._lock:
            return json.loads(json.dumps(list(self._transfers.values())))

    def transfers_in_group(self, transfer_group: str) -> list[dict[str, Any]]:
        return [transfer for transfer in self.transfers if transfer["transfer_group"] == transfer_group]

    def transfers_with_metadata(self, key: str, value: str) -> list[dict[str, Any]]:
        """E.g. transfers_with_metadata("payout_id", "5"): how many times one payout was paid."""
        return [transfer for transfer in self.transfers if transfer["metadata"].get(key) == value]

    # --- HTTP ----------------------------------------------------------------------------------------------------

    def answer(
        self, method: str, path: str, headers: dict[str, str], form: list[tuple[str, str]], query: list[tuple[str, str]]
    ) -> tuple[Answer, dict[str, str]]:
        """The answer to one API request and the headers Stripe adds to it."""
        extra = {"Request-Id": new_id("req")}
        try:
            api_key = self._authenticated(headers.get("authorization", ""))
        except StripeError as error:
            extra["WWW-Authenticate"] = 'Basic realm="Stripe"'
            return Answer(error.status, error.body()), extra
        route = _route(method, path)
        if route is None:
            unrouted = StripeError(f"Unrecognized request URL ({method}: {path}).", status=404)
            return Answer(404, unrouted.body()), extra
        operation, action, path_ids = route
        account = headers.get("stripe-account") or PLATFORM
        if account and account not in self.accounts:
            revoked = StripeError(
                f"The provided key '{api_key[:8]}{'*' * 12}{api_key[-4:]}' does not have access to account "
                f"'{account}' (or that account does not exist). Application access may have been revoked.",
                code="account_invalid",
                status=403,
            )
            return Answer(403, revoked.body()), extra
        route_name = f"{method} {_pattern_of(method, path)}"
        idempotency_key = headers.get("idempotency-key") if method == "POST" else None
        if idempotency_key is not None and len(idempotency_key) > 255:
            too_long = StripeError("Idempotency keys are up to 255 characters long.", param="Idempotency-Key")
            return Answer(400, too_long.body()), extra
        with self._lock:
            try:
                params = checked(operation, parse_form(form), parse_form(query))
                expand = params.pop("expand", None) or []
            except StripeError as error:
                # Stripe saves no idempotent result for a request that fails validation.
                self._record(method, path, {}, idempotency_key, error.status)
                return Answer(error.status, error.body()), extra
            if idempotency_key:
                extra["Idempotency-Key"] = idempotency_key
                saved = self._idempotent.get((api_key, account, idempotency_key))
                if saved is not None:
                    replay = self._replay(saved, method, path, params, idempotency_key)
                    if replay is saved.answer:
                        extra["Idempotent-Replayed"] = "true"
                    self._record(method, path, params, idempotency_key, replay.status, replayed=replay is saved.answer)
                    # A replay answers even when the first answer was lost.
                    return Answer(replay.status, replay.body), extra
            failing = self._faults.failing_routes.get(route_name)
            if failing:
                failed = failing.pop(0).error()
                self._record(method, path, params, idempotency_key, failed.status)
                return Answer(failed.status, failed.body()), extra
            self._account_in_context, self._expand_in_context = account, tuple(expand)
            # Answers are snapshots: a replay shows the object as it was first answered, and nothing serializes a
            # dict another request is changing.
            try:
                answer = Answer(200, copy.deepcopy(action(self, *path_ids, params)))
            except _Dropped as dropped:
                answer = Answer(200, copy.deepcopy(dropped.body), drop=True)
            except StripeError as error:
                answer = Answer(error.status, error.body())
            finally:
                self._account_in_context, self._expand_in_context = PLATFORM, ()
            if answer.status == 200 and self._faults.crashing_routes.get(route_name):
                self._faults.crashing_routes[route_name] -= 1
                answer = Answer(200, answer.body, drop=True)
            if idempotency_key:
                self._idempotent[(api_key, account, idempotency_key)] = _Saved(method, path, params, answer)
            self._record(method, path, params, idempotency_key, answer.status, dropped=answer.drop)
            return answer, extra

    def _authenticated(self, authorization: str) -> str:
        scheme, _, credential = authorization.partition(" ")
        if scheme.lower() == "basic":
            try:
                credential = base64.b64decode(credential).decode(errors="replace").partition(":")[0]
            except binascii.Error:
                credential = ""
        elif scheme.lower() != "bearer":
            credential = ""
        if not credential:
            raise StripeError(
                "You did not provide an API key. You need to provide your API key in the Authorization header, using "
                "Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See "
                "https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
                status=401,
            )
        if credential not in self.api_keys:
            raise StripeError(f"Invalid API Key provided: {credential[:8]}{'*' * 12}{credential[-4:]}", status=401)
        return credential

    def _replay(self, saved: _Saved, method: str, path: str, params: dict[str, Any], key: str) -> Answer:
        if (saved.method, saved.path) != (method, path):
            error = StripeError(
                "Keys for idempotent requests can only be used for the same endpoint they were first used for "
                f"('{saved.method} {saved.path}' vs '{method} {path}'). Try using a key other than '{key}' if you "
                "meant to execute a different request.",
                error_type="idempotency_error",
            )
            return Answer(400, error.body())
        if saved.params != params:
            error = StripeError(
                "Keys for idempotent requests can only be used with the same parameters they were first used with. "
                f"Try using a key other than '{key}' if you meant to execute a different request.",
                error_type="idempotency_error",
            )
            return Answer(400, error.body())
        return saved.answer

    def _record(
        self, method: str, path: str, params: dict[str, Any], key: str | None, status: int, **flags: bool
    ) -> None:
        self.requests.append(Recorded(method, path, params, key, status, **flags))

    # --- accounts ------------------------------------------------------------------------------------------------

    def _new_account(self, params: dict[str, Any]) -> dict[str, Any]:
        requested = {name for name, wish in params.get("capabilities", {}).items() if wish.get("requested")}
        account = {
            "id": new_id("acct"),
            "object": "account",
            "business_profile": {"mcc": None, "name": None, "url": None},
            "business_type": params.get("business_type"),
            "capabilities": {name: "inactive" for name in sorted(requested)},
            "charges_enabled": False,
            "controller": {"is_controller": True, "type": "application"},
            "country": params.get("country", "US"),
            "created": int(time.time()),
            "default_currency": params.get("default_currency", "usd"),
            "details_submitted": False,
            "email": params.get("email"),
            "external_accounts": {"object": "list", "data": [], "has_more": False, "url": ""},
            "metadata": {},
            "payouts_enabled": False,
            "requirements": {
                "alternatives": [],
                "current_deadline": None,
                "currently_due": list(ONBOARDING_DUE),
                "disabled_reason": "requirements.past_due",
                "errors": [],
                "eventually_due": list(ONBOARDING_DUE),
                "past_due": list(ONBOARDING_DUE),
                "pending_verification": [],
            },
            "type": params.get("type"),
        }
        account["external_accounts"]["url"] = f"/v1/accounts/{account['id']}/external_accounts"
        self._set_metadata(account, params.get("metadata"))
        self.accounts[account["id"]] = account
        return account

    def _update_account(self, account: dict[str, Any], fields: dict[str, Any]) -> None:
        for name in ("payouts_enabled", "charges_enabled", "details_submitted", "email", "country"):
            if name in fields:
                account[name] = fields[name]
        if "transfers" in fields:
            account["capabilities"]["transfers"] = fields["transfers"]
        requirements = account["requirements"]
        if "currently_due" in fields:
            requirements["currently_due"] = list(fields["currently_due"])
            requirements["past_due"] = list(fields["currently_due"])
            requirements["eventually_due"] = list(fields["currently_due"])
        if "disabled_reason" in fields:
            requirements["disabled_reason"] = fields["disabled_reason"]
        self._set_metadata(account, fields.get("metadata"))

    @staticmethod
    def _set_metadata(target: dict[str, Any], metadata: dict[str, str] | str | None) -> None:
        """Stripe's metadata update: keys merge, a key set to "" goes, metadata="" empties it."""
        if metadata == "":
            target["metadata"] = {}
        elif isinstance(metadata, dict):
            for key, value in metadata.items():
                if value == "":
                    target["metadata"].pop(key, None)
                else:
                    target["metadata"][key] = value

    def _account(self, account_id: str, params: dict[str, Any]) -> dict[str, Any]:
        if account_id not in self.accounts:
            raise not_found("account", account_id)
        return self.accounts[account_id]

    def _create_account(self, params: dict[str, Any]) -> dict[str, Any]:
        if "type" not in params:
            raise missing("type")
        return self._new_account(params)

    def _post_account(self, account_id: str, params: dict[str, Any]) -> dict[str, Any]:
        account = self._account(account_id, params)
        self._update_account(account, {key: value for key, value in params.items() if key in ("email", "metadata")})
        return account

    def _create_account_link(self, params: dict[str, Any]) -> dict[str, Any]:
        if params["account"] not in self.accounts:
            raise not_found("account", params["account"], param="account", status=400)
        token = secrets.token_urlsafe(12)
        created = int(time.time())
        self._links[token] = {**params, "used": False}
        return {
            "object": "account_link",
            "created": created,
            "expires_at": created + 300,
            "url": f"{self.url}/onboarding/{params['account']}?{urlencode({'link': token})}",
        }

    def visit_onboarding(self, path: str, query: dict[str, str]) -> str | None:
        """Where the onboarding page sends the browser: return_url once onboarding is complete (the link is used up),
        refresh_url for a used or unknown link or with ?outcome=refresh; None for a page that is not a link."""
        with self._lock:
            link = self._links.get(query.get("link", ""))
            if link is None or path != f"/onboarding/{link['account']}":
                return None
            if link["used"] or query.get("outcome") == "refresh":
                return link.get("refresh_url")
            link["used"] = True
        self.complete_onboarding(link["account"])
        return link.get("return_url")

    # --- transfers -----------------------------------------------------------------------------------------------

    def _create_transfer(self, params: dict[str, Any]) -> dict[str, Any]:
        if "amount" not in params:
            raise missing("amount")
        if params["amount"] < 1:
            raise StripeError("Invalid positive integer", code="parameter_invalid_integer", param="amount")
        currency = params["currency"].lower()
        if len(currency) != 3 or not currency.isalpha():
            raise StripeError(f"Invalid currency: {params['currency']}.", param="currency")
        destination = self.accounts.get(params["destination"])
        if destination is None:
            # An id in the body is a bad parameter (400); an id in the path is a missing resource (404).
            raise not_found("destination", params["destination"], param="destination", status=400)
        if self._faults.failures:
            raise self._faults.failures.pop(0).error()
        if destination["id"] in self._faults.failing_destinations:
            raise self._faults.failing_destinations[destination["id"]].error()
        if destination["capabilities"].get("transfers") != "active":
            raise StripeError(
                "Your destination account needs to have at least one of the following capabilities enabled: "
                "transfers, crypto_transfers, legacy_payments",
                code="insufficient_capabilities_for_transfer",
                param="destination",
            )
        if self.balance.get(currency, 0) < params["amount"]:
            raise StripeError(
                "You have insufficient available funds in your Stripe account. Try adding funds directly to your "
                "available balance by creating Charges using the 4000000000000077 test card. See: "
                "https://stripe.com/docs/testing#available-balance",
                code="balance_insufficient",
            )
        self.balance[currency] -= params["amount"]
        transfer_id = new_id("tr")
        transfer = {
            "id": transfer_id,
            "object": "transfer",
            "amount": params["amount"],
            "amount_reversed": 0,
            "balance_transaction": new_id("txn"),
            "created": int(time.time()),
            "currency": currency,
            "description": params.get("description"),
            "destination": destination["id"],
            "destination_payment": new_id("py"),
            "livemode": False,
            "metadata": dict(params.get("metadata", {})),
            "reversals": {
                "object": "list",
                "data": [],
                "has_more": False,
                "total_count": 0,
                "url": f"/v1/transfers/{transfer_id}/reversals",
            },
            "reversed": False,
            "source_transaction": params.get("source_transaction"),
            "source_type": params.get("source_type", "card"),
            "transfer_group": params.get("transfer_group"),
        }
        self._transfers[transfer_id] = transfer
        if self._faults.crashes:
            self._faults.crashes -= 1
            raise _Dropped(transfer)
        return transfer

    def _transfer(self, transfer_id: str, params: dict[str, Any]) -> dict[str, Any]:
        if transfer_id not in self._transfers:
            raise not_found("transfer", transfer_id)
        return self._transfers[transfer_id]

    def _list_transfers(self, params: dict[str, Any]) -> dict[str, Any]:
        limit = params.get("limit", 10)
        if not 1 <= limit <= 100:
            raise StripeError(
                "This value must be greater than or equal to 1 and less than or equal to 100.", param="limit"
            )
        newest_first = [
            transfer
            for transfer in reversed(self._transfers.values())
            if all(params.get(key) in (None, transfer[key]) for key in ("transfer_group", "destination"))
        ]
        ids = [transfer["id"] for transfer in newest_first]
        if "starting_after" in params:
            newest_first = (
                newest_first[ids.index(params["starting_after"]) + 1 :] if params["starting_after"] in ids else []
            )
        elif "ending_before" in params:
            cut = ids.index(params["ending_before"]) if params["ending_before"] in ids else 0
            newest_first = newest_first[max(0, cut - limit) : cut]
        return {
            "object": "list",
            "data": newest_first[:limit],
            "has_more": len(newest_first) > limit,
            "url": "/v1/transfers",
        }

    def _reverse_transfer(self, transfer_id: str, params: dict[str, Any]) -> dict[str, Any]:
        transfer = self._transfer(transfer_id, params)
        unreversed = transfer["amount"] - transfer["amount_reversed"]
        amount = params.get("amount", unreversed)
        if amount < 1 or amount > unreversed:
            raise StripeError(
                f"Reversal amount ({amount}) must be between 1 and the transfer's unreversed amount ({unreversed}).",
                param="amount",
            )
        reversal = {
            "id": new_id("trr"),
            "object": "transfer_reversal",
            "amount": amount,
            "balance_transaction": new_id("txn"),
            "created": int(time.time()),
            "currency": transfer["currency"],
            "destination_payment_refund": new_id("pyr"),
            "metadata": dict(params["metadata"]) if isinstance(params.get("metadata"), dict) else {},
            "source_refund": None,
            "transfer": transfer_id,
        }
        transfer["amount_reversed"] += amount
        transfer["reversed"] = transfer["amount_reversed"] == transfer["amount"]
        transfer["reversals"]["data"].insert(0, reversal)
        transfer["reversals"]["total_count"] += 1
        self.balance[transfer["currency"]] = self.balance.get(transfer["currency"], 0) + amount
        return reversal

    def _balance(self, params: dict[str, Any]) -> dict[str, Any]:
        def funds(amounts: dict[str, int]) -> list[dict[str, Any]]:
            return [
                {"amount": amount, "currency": currency, "source_types": {"card": amount}}
                for currency, amount in sorted(amounts.items())
            ]

        return {
            "object": "balance",
            "available": funds(self.balance),
            "livemode": False,
            "pending": funds({currency: 0 for currency in self.balance}),
        }


class _Dropped(Exception):
    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__("connection dropped after the transfer was made")
        self.body = body


Action = Callable[..., dict[str, Any]]
# (method, path pattern, operation in openapi_subset.json, handler); "*" matches one path segment, an object id.
ROUTES: list[tuple[str, str, str, Action]] = [
    ("POST", "/v1/accounts", "POST /v1/accounts", StripeFake._create_account),
    ("GET", "/v1/accounts/*", "GET /v1/accounts/{account}", StripeFake._account),
    ("POST", "/v1/accounts/*", "POST /v1/accounts/{account}", StripeFake._post_account),
    ("POST", "/v1/account_links", "POST /v1/account_links", StripeFake._create_account_link),
    ("POST", "/v1/transfers", "POST /v1/transfers", StripeFake._create_transfer),
    ("GET", "/v1/transfers", "GET /v1/transfers", StripeFake._list_transfers),
    ("GET", "/v1/transfers/*", "GET /v1/transfers/{transfer}", StripeFake._transfer),
    ("POST", "/v1/transfers/*/reversals", "POST /v1/transfers/{id}/reversals", StripeFake._reverse_transfer),
    ("GET", "/v1/balance", "GET /v1/balance", StripeFake._balance),
    ("POST", "/v1/coupons", "POST /v1/coupons", StripeFake._create_coupon),
    ("GET", "/v1/coupons/*", "GET /v1/coupons/{coupon}", StripeFake._coupon),
    ("POST", "/v1/promotion_codes", "POST /v1/promotion_codes", StripeFake._create_promotion_code),
    ("GET", "/v1/promotion_codes/*", "GET /v1/promotion_codes/{promotion_code}", StripeFake._promotion_code),
    (
        "POST",
        "/v1/promotion_codes/*",
        "POST /v1/promotion_codes/{promotion_code}",
        StripeFake._update_promotion_code,
    ),
    ("GET", "/v1/invoices/*", "GET /v1/invoices/{invoice}", StripeFake._invoice),
    ("GET", "/v1/checkout/sessions/*", "GET /v1/checkout/sessions/{session}", StripeFake._checkout_session),
]


def _pattern_of(method: str, path: str) -> str:
    """The route's pattern for a request path: "/v1/promotion_codes/*" for "/v1/promotion_codes/promo_1..."."""
    segments = path.rstrip("/").split("/")
    for route_method, pattern, _, _ in ROUTES:
        parts = pattern.split("/")
        if route_method == method and len(parts) == len(segments):
            if all(part in ("*", segment) for part, segment in zip(parts, segments, strict=True)):
                return pattern
    return path


def _route(method: str, path: str) -> tuple[str, Action, list[str]] | None:
    segments = path.rstrip("/").split("/")
    for route_method, pattern, operation, action in ROUTES:
        parts = pattern.split("/")
        if route_method == method and len(parts) == len(segments):
            if all(part in ("*", segment) for part, segment in zip(parts, segments, strict=True)):
                return (
                    operation,
                    action,
                    [segment for part, segment in zip(parts, segments, strict=True) if part == "*"],
                )
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Twenty clients connecting at once overflow the default backlog of 5, and the kernel makes some wait a second.
    request_queue_size = 64


def _handler_for(fake: StripeFake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path.startswith("/onboarding/"):
                self._onboarding(url.path, dict(parse_qsl(url.query)))
            else:
                self._api("GET", b"")

        def do_POST(self) -> None:
            self._api("POST", self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        def do_DELETE(self) -> None:
            self._api("DELETE", b"")

        def _api(self, method: str, body: bytes) -> None:
            url = urlsplit(self.path)
            headers = {name.lower(): value for name, value in self.headers.items()}
            answer, extra = fake.answer(
                method,
                url.path,
                headers,
                parse_qsl(body.decode(), keep_blank_values=True),
                parse_qsl(url.query, keep_blank_values=True),
            )
            if answer.drop:
                self.close_connection = True
                return
            payload = json.dumps(answer.body, indent=2).encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Stripe-Version", "fake")
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _onboarding(self, path: str, query: dict[str, str]) -> None:
            target = fake.visit_onboarding(path, query)
            if target is None:
                self.send_error(404)
                return
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
