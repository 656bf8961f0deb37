"""The click and sale routes' common calls skip DRF (tracking/api/lean.py). Each call here is sent twice, once as
routed and once with the lean path turned off (ClickTrackApi or SaleTrackApi, DRF), each time on a fresh world: the
two answers, their headers, their request-log rows and the rows they wrote must be the same, and the lean path must
have answered exactly the calls it claims (the others are handed to DRF untouched)."""

import json
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.core.cache import caches
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from commissions.models import Commission, LedgerEntry
from programs.models import ApiCall, Program, ProgramKey
from tests.factories import CustomerFactory, ProgramFactory, ReferralLinkFactory, SaleFactory
from tracking.api import lean
from tracking.models import ClickEvent, Customer, SaleEvent
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

LEAN_MIDDLEWARE = "tracking.api.lean.LeanRoutesMiddleware"
URL = "/api/v1/track/click"
SALE_URL = "/api/v1/track/sale"
CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
# Headers whose values differ from call to call whichever path answers (a click id's length varies with its ids).
VARYING_HEADERS = {"X-Request-ID", "X-RateLimit-Reset", "Date", "Content-Length"}


def url_of(code: str) -> str:
    return f"https://shop.example.com/pricing?aff={code}"


def body_of(**fields: Any) -> bytes:
    return json.dumps({"affiliate_url": url_of("lean"), "user_agent": CHROME, **fields}).encode()


# (case, raw body, headers, whether the lean path answers it)
LEAN = True
FIRST_PARTY = {"HTTP_X_FORWARDED_PREFIX": "/_svc"}
FIRST_PARTY_HTTPS = {**FIRST_PARTY, "HTTP_X_FORWARDED_PROTO": "https", "HTTP_X_FORWARDED_HOST": "www.example.com"}
CASES: list[tuple[str, bytes | str, dict[str, str], bool]] = [
    ("a new visitor", body_of(session_id="s1", page_url="https://shop.example.com/"), {}, LEAN),
    ("Accept */*", body_of(), {"HTTP_ACCEPT": "*/*"}, LEAN),
    ("Accept application/json", body_of(), {"HTTP_ACCEPT": "application/json"}, LEAN),
    ("a charset", body_of(), {"CONTENT_TYPE": "application/json; charset=utf-8"}, LEAN),
    ("the via alias", body_of(affiliate_url="https://shop.example.com/?via=lean"), {}, LEAN),
    ("an unknown code", body_of(affiliate_url=url_of("nobody")), {}, LEAN),
    ("a paused link", body_of(affiliate_url=url_of("paused")), {}, LEAN),
    ("no aff parameter", body_of(affiliate_url="https://shop.example.com/"), {}, LEAN),
    ("an ftp URL", body_of(affiliate_url="ftp://shop.example.com/?aff=lean"), {}, LEAN),
    ("its own program", body_of(program_id="{program}"), {}, LEAN),
    ("another program", body_of(program_id="{other}"), {}, LEAN),
    ("an unknown program", body_of(program_id=999999), {}, LEAN),
    ("a bot", body_of(user_agent="Googlebot/2.1 (+http://www.google.com/bot.html)"), {}, LEAN),
    ("a test click", body_of(additional_data={"test_mode": True}), {}, LEAN),
    ("an existing click id", body_of(existing_click_id="cust_lean_returning"), {}, LEAN),
    ("visitor_ip without a key", body_of(visitor_ip="81.2.69.160"), {}, LEAN),
    ("no affiliate_url", json.dumps({"page_url": "https://shop.example.com/"}).encode(), {}, not LEAN),
    ("a number for page_url", body_of(page_url=5), {}, not LEAN),
    ("malformed JSON", b'{"affiliate_url": ', {}, not LEAN),
    ("a JSON array", b"[1, 2]", {}, not LEAN),
    ("a duplicate key", b'{"affiliate_url": "a", "affiliate_url": "b"}', {}, not LEAN),
    ("NUL in a field", body_of(page_title="a\u0000b"), {}, not LEAN),
    ("an empty body", b"", {}, not LEAN),
    ("text/plain", body_of(), {"CONTENT_TYPE": "text/plain"}, not LEAN),
    ("form data", "affiliate_url=x", {"CONTENT_TYPE": "application/x-www-form-urlencoded"}, not LEAN),
    ("Accept text/html", body_of(), {"HTTP_ACCEPT": "text/html"}, not LEAN),
    ("Accept with indent", body_of(), {"HTTP_ACCEPT": "application/json; indent=4"}, not LEAN),
    ("a browser's Accept", body_of(), {"HTTP_ACCEPT": "text/html,application/xhtml+xml,*/*;q=0.8"}, not LEAN),
    ("a query string", body_of(), {"QUERY_STRING": "format=json"}, not LEAN),
    ("a key", body_of(visitor_ip="81.2.69.160"), {"HTTP_AUTHORIZATION": "Bearer {key}"}, not LEAN),
    ("a wrong key", body_of(), {"HTTP_AUTHORIZATION": "Bearer sk_live_nobody"}, not LEAN),
    # First-party mode (tracking/api/first_party.py): the cookie the server sets is compared too.
    ("a first-party click", body_of(), FIRST_PARTY, LEAN),
    ("a first-party click, forwarded", body_of(), FIRST_PARTY_HTTPS, LEAN),
    ("a first-party returning visitor", body_of(existing_click_id="cust_lean"), FIRST_PARTY, LEAN),
    ("a first-party paused link", body_of(affiliate_url=url_of("paused")), FIRST_PARTY, LEAN),
    ("a first-party bot", body_of(user_agent="Googlebot/2.1 (+http://www.google.com/bot.html)"), FIRST_PARTY, LEAN),
    ("a first-party test click", body_of(additional_data={"test_mode": True}), FIRST_PARTY, LEAN),
    ("a first-party click, Accept text/html", body_of(), {**FIRST_PARTY, "HTTP_ACCEPT": "text/html"}, not LEAN),
    ("a first-party click with a key", body_of(), {**FIRST_PARTY, "HTTP_AUTHORIZATION": "Bearer {key}"}, not LEAN),
]


def raw_key(program: Program, name: str = "raw_api_key") -> str:
    key: str = getattr(program, name)  # set by the factory, not a model field
    return key


def world() -> dict[str, Any]:
    program = ProgramFactory.create(name="Lean")
    link = ReferralLinkFactory.create(program=program, short_link="lean")
    ReferralLinkFactory.create(program=program, short_link="paused", is_active=False)
    customer = CustomerFactory.create(link=link, click_id="cust_lean", customer_key="ck_lean")
    SaleFactory.create(customer=customer, processor_event_id="txn_taken", amount_cents=100)
    other = ProgramFactory.create(name="Other")
    CustomerFactory.create(link=ReferralLinkFactory.create(program=other), click_id="cust_other")
    flagged, retired = ProgramFactory.create(name="Flagged"), ProgramFactory.create(name="Retired")
    # Fixed times, so that both worlds' keys give the same deadlines in their answers and headers.
    for marked, deadline in ((flagged, ROTATION_AHEAD), (retired, ROTATION_PAST)):
        ProgramKey.objects.live().filter(program=marked).update(
            rotation_marked_at=MARKED_AT, rotation_deadline=deadline
        )
    return {
        "program": program.pk,
        "other": other.pk,
        "key": raw_key(program),
        "test_key": raw_key(program, "raw_test_api_key"),
        "flagged_key": raw_key(flagged),
        "retired_key": raw_key(retired),
    }


def send(client: Client, raw: bytes | str, headers: dict[str, str], names: dict[str, Any], url: str = URL) -> Any:
    raw = raw if isinstance(raw, bytes) else raw.encode()
    for name, value in names.items():
        raw = raw.replace(f'"{{{name}}}"'.encode(), str(value).encode())
    extra: dict[str, Any] = {name: value.format(**names) for name, value in headers.items()}
    content_type = extra.pop("CONTENT_TYPE", "application/json")
    return client.generic("POST", url, raw, content_type=content_type, REMOTE_ADDR="203.0.113.9", **extra)


# Per route: its URL, the DRF view the lean path hands calls to, and the lean path's decision.
ROUTES = {URL: ("drf_track_click", "_plain_click"), SALE_URL: ("drf_track_sale", "_plain_sale")}


def answered(
    raw: bytes | str, headers: dict[str, str], *, lean_on: bool, keep_counts: bool = False, url: str = URL
) -> dict[str, Any]:
    """One call on a fresh world (rolled back after): the answer, its headers, the rows it wrote and whether DRF
    answered it."""
    if not keep_counts:
        caches[settings.RATELIMIT_USE_CACHE].clear()
    with transaction.atomic():
        summary = _answered(raw, headers, lean_on=lean_on, url=url)
        transaction.set_rollback(True)
    return summary


def _answered(raw: bytes | str, headers: dict[str, str], *, lean_on: bool, url: str) -> dict[str, Any]:
    names = world()
    handed: list[bool] = []
    drf_name, decision_name = ROUTES[url]
    drf = getattr(lean, drf_name)

    def to_drf(request: Any) -> Any:
        handed.append(True)
        return drf(request)

    # Turned off, the call goes through the whole middleware chain, as every other route's do.
    middleware = settings.MIDDLEWARE if lean_on else [path for path in settings.MIDDLEWARE if path != LEAN_MIDDLEWARE]
    with pytest.MonkeyPatch.context() as patch, override_settings(MIDDLEWARE=middleware):
        patch.setattr(lean, drf_name, to_drf)
        if not lean_on:
            patch.setattr(lean, decision_name, lambda request: None)
        response = send(Client(), raw, headers, names, url)
    body = response.content.decode()
    # The cookies as the WSGI handler sends them (Set-Cookie is not among response.headers).
    cookies = sorted(cookie.output(header="").strip() for cookie in response.cookies.values())
    for name in ("program", "other"):
        body = body.replace(f'"programId":{names[name]}', f'"programId":"<{name}>"')
    # Ids differ from world to world: each rolled back world's sequences have moved on.
    body = re.sub(r'"(eventId|sale_id|commission_id)":\d+', r'"\1":"<id>"', body)
    for click_id in [
        *Customer.objects.values_list("click_id", flat=True),
        *ClickEvent.objects.values_list("click_id", flat=True),
    ]:
        body = body.replace(click_id, "<click_id>")
        cookies = [cookie.replace(click_id, "<click_id>") for cookie in cookies]
    log = list(
        ApiCall.objects.values(
            "method", "route", "status", "error_code", "message", "key_masked", "key_mode", "excerpt", "program__name"
        )
    )
    for row in log:
        row["key_masked"] = row["key_masked"][:-4]  # each world has its own key
        if "program_id" in row["excerpt"]:
            row["excerpt"]["program_id"] = "<program_id>"
    summary = {
        "status": response.status_code,
        "body": body,
        "headers": {name: value for name, value in response.headers.items() if name not in VARYING_HEADERS},
        "header names": sorted(response.headers),
        "cookies": cookies,
        "log": log,
        "customers": Customer.objects.count(),
        "clicks": list(ClickEvent.objects.values_list("traffic", "is_test", "program__name")),
        "sales": list(
            SaleEvent.objects.order_by("pk").values_list(
                "processor_event_id", "amount_cents", "attributed_by", "is_test", "program__name"
            )
        ),
        "commissions": list(Commission.objects.values_list("amount_cents", "status", "credited")),
        "ledger": list(LedgerEntry.objects.values_list("kind", "amount_cents")),
        "events": sorted(WebhookEvent.objects.values_list("type", flat=True)),
        "by_drf": bool(handed),
    }
    return summary


COMPARED: tuple[str, ...] = ("status", "body", "headers", "header names", "cookies", "log", "customers", "clicks")
COMPARED += ("sales",)
COMPARED += ("commissions", "ledger", "events")


@pytest.mark.parametrize(("case", "raw", "headers", "lean_answers"), CASES, ids=[case[0] for case in CASES])
def test_the_lean_path_answers_as_drf_does(case, raw, headers, lean_answers):
    assert_answered_alike(raw, headers, lean_answers, url=URL)


def assert_answered_alike(raw: bytes | str, headers: dict[str, str], lean_answers: bool, *, url: str) -> dict[str, Any]:
    """The call as routed and through DRF: the same answer and rows, and the lean path took it exactly when
    claimed. Returns the routed answer."""
    routed = answered(raw, headers, lean_on=True, url=url)
    through_drf = answered(raw, headers, lean_on=False, url=url)
    assert through_drf["by_drf"]
    assert routed["by_drf"] is not lean_answers
    for part in COMPARED:
        assert routed[part] == through_drf[part], part
    assert routed["log"], "every call leaves its request-log row"
    return routed


FIRST_PARTY_CASES = [
    ("a new visitor", body_of(), FIRST_PARTY, LEAN),
    ("over https at the shop's host", body_of(), FIRST_PARTY_HTTPS, LEAN),
    ("a returning visitor", body_of(existing_click_id="cust_lean"), FIRST_PARTY_HTTPS, LEAN),
    ("handed to DRF (a key)", body_of(), {**FIRST_PARTY_HTTPS, "HTTP_AUTHORIZATION": "Bearer {key}"}, not LEAN),
]


@pytest.mark.parametrize(
    ("case", "raw", "headers", "lean_answers"), FIRST_PARTY_CASES, ids=[case[0] for case in FIRST_PARTY_CASES]
)
def test_a_first_party_click_sets_the_same_cookie_behind_a_trusted_proxy(settings, case, raw, headers, lean_answers):
    settings.TRUSTED_PROXY_COUNT = 1
    settings.FIRST_PARTY_COOKIE_DOMAIN = "example.com"
    routed = assert_answered_alike(raw, headers, lean_answers, url=URL)
    forwarded = "HTTP_X_FORWARDED_HOST" in headers
    attributes = "Domain=example.com; " if forwarded else ""
    window = 30 * 86400  # ProgramFactory's cookie_duration, in seconds
    assert routed["cookies"] == [
        f"svc_click_id=<click_id>; {attributes}Max-Age={window}; Path=/; SameSite=Lax" + ("; Secure" * forwarded)
    ]


def test_a_rate_limited_click_is_answered_alike(settings):
    settings.RATELIMIT_SCALE = 1e-9  # one call a minute per bucket
    answers = []
    for lean_on in (True, False):
        first = answered(body_of(), {}, lean_on=lean_on)
        second = answered(body_of(), {}, lean_on=lean_on, keep_counts=True)
        assert (first["status"], second["status"]) == (200, 429)
        assert second["clicks"] == [] and "Retry-After" in second["headers"]
        answers.append(second)
    assert without_seconds_left(answers[0]) == without_seconds_left(answers[1])
    assert answers[0]["by_drf"] is False


def without_seconds_left(answer: dict[str, Any]) -> dict[str, Any]:
    """A 429's seconds to wait tick down between the two calls compared: their numbers are left out."""
    headers = {name: value for name, value in answer["headers"].items() if name != "Retry-After"}
    body = answer["body"] if isinstance(answer["body"], str) else json.dumps(answer["body"])
    log = [{**row, "message": re.sub(r"\d+", "N", row.get("message") or "")} for row in answer.get("log", [])]
    seconds_left = {"by_drf": None, "headers": headers, "body": re.sub(r"\d+", "N", body)}
    return {**answer, **seconds_left, **({"log": log} if "log" in answer else {})}


def test_an_unexpected_failure_is_a_logged_500_in_the_envelope(caplog):
    def failing(**kwargs: Any) -> None:
        raise RuntimeError("a failure nobody expected")

    answers = []
    for lean_on in (True, False):
        with pytest.MonkeyPatch.context() as patch, transaction.atomic():
            patch.setattr("tracking.services.click._click_record", failing)
            if not lean_on:
                patch.setattr(lean, "_plain_click", lambda request: None)
            response = send(Client(raise_request_exception=False), body_of(), {}, world())
            transaction.set_rollback(True)
        answers.append((response.status_code, response.json(), response["Allow"]))
    assert answers[0] == answers[1]
    assert answers[0][0] == 500
    assert [r.message for r in caplog.records].count("api.unhandled_error") == 2


def test_the_lean_path_is_one_statement_for_a_new_visitor_on_a_cached_link(monkeypatch):
    world()
    send(Client(), body_of(), {}, {})  # the link is read and cached
    calls: list[Callable[..., Any]] = []
    monkeypatch.setattr(lean, "drf_track_click", calls.append)
    with CaptureQueriesContext(connection) as captured:
        response = send(Client(), body_of(), {}, {})
    assert response.status_code == 200 and not calls
    statements = [q["sql"].split()[0] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]
    # PostgreSQL: the click (WITH ... INSERT ... INSERT) and the request log's COPY (tests write it at once);
    # SQLite: the two INSERTs (the duplicate probe in the click's) and the log's INSERT.
    assert statements == (["WITH", "COPY"] if connection.vendor == "postgresql" else ["INSERT", "INSERT", "INSERT"])


def sale_of(**fields: Any) -> bytes:
    return json.dumps({"transaction_id": "txn_lean", "amount_cents": 4900, "click_id": "cust_lean", **fields}).encode()


KEY = {"HTTP_AUTHORIZATION": "Bearer {key}"}
MARKED_AT = timezone.now().replace(microsecond=0) - timedelta(days=1)
ROTATION_AHEAD, ROTATION_PAST = MARKED_AT + timedelta(days=8), MARKED_AT + timedelta(hours=1)
SALE_CASES: list[tuple[str, bytes | str, dict[str, str], bool]] = [
    ("a commissioned sale", sale_of(), KEY, LEAN),
    ("by customer_key", sale_of(click_id="", customer_key="ck_lean"), KEY, LEAN),
    ("an unknown customer_key, then click_id", sale_of(customer_key="ck_nobody"), KEY, LEAN),
    ("customer_key and click_id", sale_of(customer_key="ck_lean"), KEY, LEAN),
    ("an unknown click_id", sale_of(click_id="cust_nobody"), KEY, LEAN),
    ("no customer named", sale_of(click_id=""), KEY, LEAN),
    ("another program's customer", sale_of(click_id="cust_other"), KEY, LEAN),
    ("a taken transaction id", sale_of(transaction_id="txn_taken"), KEY, LEAN),
    ("an unsupported currency", sale_of(currency="XXX"), KEY, LEAN),
    ("a currency in lower case", sale_of(currency="eur"), KEY, LEAN),
    ("a click_id with spaces", sale_of(click_id=" cust_lean "), KEY, LEAN),
    ("a subscription", sale_of(sale_type="subscription", subscription_interval="monthly"), KEY, LEAN),
    ("the test key", sale_of(), {"HTTP_AUTHORIZATION": "Bearer {test_key}"}, LEAN),
    ("livemode false", sale_of(livemode=False), KEY, LEAN),
    ("test_mode in additional_data", sale_of(additional_data={"test_mode": True}), KEY, LEAN),
    ("a test sale with no id", json.dumps({"livemode": False, "click_id": "cust_lean"}), KEY, LEAN),
    ("a key flagged for rotation", sale_of(), {"HTTP_AUTHORIZATION": "Bearer {flagged_key}"}, not LEAN),
    ("a retired key", sale_of(), {"HTTP_AUTHORIZATION": "Bearer {retired_key}"}, not LEAN),
    ("an unknown key", sale_of(), {"HTTP_AUTHORIZATION": "Bearer sk_live_nobody"}, not LEAN),
    ("no key", sale_of(), {}, not LEAN),
    ("an empty bearer", sale_of(), {"HTTP_AUTHORIZATION": "Bearer "}, not LEAN),
    ("basic auth", sale_of(), {"HTTP_AUTHORIZATION": "Basic dXNlcjpwYXNz"}, not LEAN),
    ("no amount", json.dumps({"transaction_id": "t", "click_id": "cust_lean"}), KEY, not LEAN),
    ("a decimal amount", sale_of(amount_cents=49.5), KEY, not LEAN),
    ("malformed JSON", b'{"transaction_id": ', KEY, not LEAN),
    ("a JSON array", b"[]", KEY, not LEAN),
    ("text/plain", sale_of(), {**KEY, "CONTENT_TYPE": "text/plain"}, not LEAN),
    ("Accept text/html", sale_of(), {**KEY, "HTTP_ACCEPT": "text/html"}, not LEAN),
]


@pytest.mark.parametrize(("case", "raw", "headers", "lean_answers"), SALE_CASES, ids=[c[0] for c in SALE_CASES])
def test_the_lean_sale_answers_as_drf_does(case, raw, headers, lean_answers):
    assert_answered_alike(raw, headers, lean_answers, url=SALE_URL)


def test_a_rate_limited_sale_is_answered_alike_and_records_nothing(settings):
    settings.RATELIMIT_SCALE = 1e-9  # one call a minute per key
    answers = []
    for lean_on in (True, False):
        caches[settings.RATELIMIT_USE_CACHE].clear()
        with pytest.MonkeyPatch.context() as patch, transaction.atomic():
            if not lean_on:
                patch.setattr(lean, "_plain_sale", lambda request: None)
            names = world()
            assert send(Client(), sale_of(transaction_id="txn_1"), KEY, names, SALE_URL).status_code == 200
            refused = send(Client(), sale_of(transaction_id="txn_2"), KEY, names, SALE_URL)
            assert not SaleEvent.objects.filter(processor_event_id="txn_2").exists()
            transaction.set_rollback(True)
        headers = {name: value for name, value in refused.headers.items() if name not in VARYING_HEADERS}
        answers.append({"status": refused.status_code, "body": refused.json(), "headers": headers})
    assert without_seconds_left(answers[0]) == without_seconds_left(answers[1])
    assert answers[0]["status"] == 429 and "Retry-After" in answers[0]["headers"]


@pytest.mark.postgres
def test_a_plain_sale_reads_its_key_and_customer_in_one_statement(monkeypatch):
    names = world()
    send(Client(), sale_of(transaction_id="txn_warm"), KEY, names, SALE_URL)  # the program's rules are cached
    calls: list[Callable[..., Any]] = []
    monkeypatch.setattr(lean, "drf_track_sale", calls.append)
    with CaptureQueriesContext(connection) as captured:
        response = send(Client(), sale_of(), KEY, names, SALE_URL)
    assert response.status_code == 200 and not calls
    assert response.json()["commission_id"] is not None
    reads = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("SELECT")]
    # The key with its program and, joined, the customer the click_id names: one statement, where DRF's path
    # reads the key, then the customer.
    assert len(reads) == 1
    assert '"programs_programkey"' in reads[0] and "LATERAL" in reads[0] and '"tracking_customer"' in reads[0]


# --- LeanRoutesMiddleware: the tracking routes skip the signed-in middleware -----------------------------------

OTHER_ROUTES = {
    "/api/v1/track/lead": {"click_id": "cust_lean", "customer_key": "ck_new"},
    "/api/v1/track/refund": {"transaction_id": "txn_taken", "amount_cents": 50},
    "/api/v1/track/visit": {"click_id": "cust_lean", "page_url": "https://shop.example.com/pricing"},
}


@pytest.mark.parametrize("with_key", [True, False], ids=["with the key", "without a key"])
@pytest.mark.parametrize("url", sorted(OTHER_ROUTES))
def test_the_other_tracking_routes_answer_alike_without_the_signed_in_middleware(url, with_key):
    answers = []
    for lean_on in (True, False):
        caches[settings.RATELIMIT_USE_CACHE].clear()
        middleware = settings.MIDDLEWARE if lean_on else [m for m in settings.MIDDLEWARE if m != LEAN_MIDDLEWARE]
        with transaction.atomic(), override_settings(MIDDLEWARE=middleware):
            headers = {"HTTP_AUTHORIZATION": "Bearer {key}"} if with_key else {}
            response = send(Client(), json.dumps(OTHER_ROUTES[url]), headers, world(), url)
            transaction.set_rollback(True)
        answers.append(
            {
                "status": response.status_code,
                # Ids and times differ from world to world.
                "body": re.sub(r"\d+", "N", response.content.decode()),
                "headers": {name: value for name, value in response.headers.items() if name not in VARYING_HEADERS},
                "header names": sorted(response.headers),
            }
        )
    assert answers[0] == answers[1]


def test_a_first_party_visit_refreshes_the_same_cookie_without_the_signed_in_middleware(settings):
    settings.TRUSTED_PROXY_COUNT = 1
    answers = []
    for lean_on in (True, False):
        caches[settings.RATELIMIT_USE_CACHE].clear()
        middleware = settings.MIDDLEWARE if lean_on else [m for m in settings.MIDDLEWARE if m != LEAN_MIDDLEWARE]
        with transaction.atomic(), override_settings(MIDDLEWARE=middleware):
            names = world()
            body = json.dumps({**OTHER_ROUTES["/api/v1/track/visit"], "program_id": names["program"]})
            response = send(Client(), body, FIRST_PARTY_HTTPS, names, "/api/v1/track/visit")
            transaction.set_rollback(True)
        answers.append(
            {
                "status": response.status_code,
                "body": re.sub(r"\d+", "N", response.content.decode()),
                "headers": {name: value for name, value in response.headers.items() if name not in VARYING_HEADERS},
                "cookies": sorted(cookie.output(header="").strip() for cookie in response.cookies.values()),
            }
        )
    assert answers[0] == answers[1]
    window = 30 * 86400  # ProgramFactory's cookie_duration, in seconds
    assert answers[0]["cookies"] == [f"svc_click_id=cust_lean; Max-Age={window}; Path=/; SameSite=Lax; Secure"]


def test_the_tracking_routes_skip_the_signed_in_middleware_and_nothing_else(monkeypatch):
    from django.contrib.sessions.middleware import SessionMiddleware
    from django.middleware.clickjacking import XFrameOptionsMiddleware

    seen: list[tuple[str, str]] = []
    session_request, frame_response = SessionMiddleware.process_request, XFrameOptionsMiddleware.process_response

    def session_seen(self: Any, request: Any) -> Any:
        seen.append(("session", request.path))
        return session_request(self, request)

    def frame_seen(self: Any, request: Any, response: Any) -> Any:
        seen.append(("frame", request.path))
        return frame_response(self, request, response)

    monkeypatch.setattr(SessionMiddleware, "process_request", session_seen)
    monkeypatch.setattr(XFrameOptionsMiddleware, "process_response", frame_seen)
    world()
    client = Client()
    for url in (URL, SALE_URL, *OTHER_ROUTES):
        client.post(url, {}, content_type="application/json")
    client.get(URL)  # not a POST: the whole chain
    client.get("/healthz")
    tracking_posts = [URL, SALE_URL, *OTHER_ROUTES]
    assert [path for kind, path in seen if kind == "session"] == [URL, "/healthz"]
    assert [path for kind, path in seen if kind == "frame"] == [*tracking_posts, URL, "/healthz"]


def test_a_middleware_with_view_hooks_after_it_is_refused(settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.tracking.test_lean_routes.ViewHookMiddleware"]
    with pytest.raises(ImproperlyConfigured, match="ViewHookMiddleware"):
        Client().post(URL, {}, content_type="application/json")


class ViewHookMiddleware:
    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        return self.get_response(request)

    def process_view(self, request: Any, view: Any, args: Any, kwargs: Any) -> None:
        return None
