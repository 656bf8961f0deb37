"""The partner portal (docs/partners.md) and the payouts' Stripe webhook (docs/payouts.md) on the real server, 3
workers, over HTTP: an invitation followed in a browser, a portal session (cookie `svc_portal`, path /portal/) that
every worker honours and that signing out everywhere ends on every worker, dashboard and portal sessions that never
open each other's pages, the portal's limits counted once per instance, one partner's ids and cursors in another's
session, CSRF, and the webhook's signatures and junk."""

import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest
import redis
from django.core import signing

from commissions.models import Commission
from core.pagination import cursor_of
from payouts.models import Payout, PayoutAccount, Rail
from portal import applications
from portal.services import account_create, account_get, invitation_accept, invitation_create
from portal.session import COOKIE, COOKIE_PATH
from portal.views import SIGN_IN_FAILED
from programs.models import Partner, PartnerApplication, PartnerInvitation, PartnerProgram, Program, ReferralLink, Role
from tests.factories import MembershipFactory, ProgramFactory, ReferralLinkFactory, UserFactory
from tests.portal.test_commissions_balance import commission_for
from tests.portal.test_payouts_portal import paid_by_paypal, paid_out
from tests.stripe_fake.events import event, signed
from tests.stripe_payloads import sign

from .conftest import (
    WINDOW_MARGIN_SECONDS,
    Served,
    _start,
    seconds_left_in_window,
    send_concurrently,
    sign_in,
)
from .test_agent_api_served import log_offset, log_since, pids_since

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PARTNER_PASSWORD = "long enough passphrase 1"
# The portal's pages for a signed-in partner that take no id (docs/partners.md, "What partners see").
PAGES = (
    "/portal/",
    "/portal/links",
    "/portal/performance",
    "/portal/commissions",
    "/portal/balance",
    "/portal/payouts",
    "/portal/account",
)
SIGN_IN_LIMIT = 10  # a minute per client address (portal.views.ATTEMPTS_PER_MINUTE)
APPLICATION_LIMIT = 5  # an hour per client address (portal.applications.SUBMISSIONS_PER_HOUR)
WEBHOOK = "/api/payouts/stripe/webhook"
PAYOUT_SECRETS = ("whsec_served_connect_endpoint", "whsec_served_account_endpoint")


@pytest.fixture(scope="module")
def served(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Served]:
    """This module's embedded server: the conftest's, with both payout endpoints' signing secrets. Its environment
    is this process's with the conftest's laid over it, so the secrets are set here while it starts, and only then.
    `any_served` takes this one too."""
    serving = contextmanager(_start)(tmp_path_factory.mktemp("served-portal"), redis_url="")
    with django_db_blocker.unblock(), ExitStack() as stack:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("STRIPE_PAYOUTS_WEBHOOK_SECRETS", ",".join(PAYOUT_SECRETS))
            yielded = stack.enter_context(serving)
        yield yielded


# --- client addresses ----------------------------------------------------------------------------------------------
# The portal counts sign-ins (and invitation forms) per bare client address, so every browser that signs in gets an
# address of its own: no test's sign-ins add up to another's limit. 127.0.1.0/24, apart from the conftest's
# 127.0.0.0/24, whose buckets are the API's.

_portal_addresses: set[str] = set()


def address_with_a_full_window(period: int = 60) -> str:
    for last in range(2, 255):
        address = f"127.0.1.{last}"
        if address not in _portal_addresses and seconds_left_in_window(address, period) >= WINDOW_MARGIN_SECONDS:
            _portal_addresses.add(address)
            return address
    raise AssertionError("no loopback address has a rate-limit window with time left")


def browser_for(served: Served, *, period: int = 60) -> httpx.Client:
    """A browser with a client address of its own (the server sees it as REMOTE_ADDR)."""
    transport = httpx.HTTPTransport(local_address=address_with_a_full_window(period))
    return httpx.Client(base_url=served.url, transport=transport, timeout=15)


def csrf_token(browser: httpx.Client, form_path: str) -> str:
    """Opens the form, as a person would before sending it, and answers the CSRF token its cookie carries."""
    form = browser.get(form_path)
    assert form.status_code == 200, form.text[:300]
    return browser.cookies["csrftoken"]


def portal_sign_in(browser: httpx.Client, email: str) -> str:
    """Signs in through /portal/sign-in; answers the portal session's key."""
    token = csrf_token(browser, "/portal/sign-in")
    landed = browser.post(
        "/portal/sign-in",
        data={"email": email, "password": PARTNER_PASSWORD, "next": "/portal/", "csrfmiddlewaretoken": token},
    )
    assert landed.status_code == 302 and landed.headers["Location"] == COOKIE_PATH, landed.text[:300]
    key = browser.cookies.get(COOKIE)
    assert key
    return key


def with_cookie(served: Served, cookie: str) -> httpx.Client:
    """A client that sends `cookie` on every path, whatever path the server gave it: what a forged cookie does."""
    return httpx.Client(base_url=served.url, headers={"Cookie": cookie}, timeout=15)


def statuses(responses: list[httpx.Response]) -> Counter[int]:
    return Counter(response.status_code for response in responses)


def goes_to_portal_sign_in(response: httpx.Response) -> bool:
    return response.status_code == 302 and response.headers["Location"].startswith("/portal/sign-in?next=")


def enrolled(program: Program, email: str) -> tuple[Partner, str]:
    """`email`'s account (made on first use) in `program` through an invitation it accepted, made by the
    services. Answers the partner row and the invitation link's token."""
    account = account_get(email) or account_create(email, PARTNER_PASSWORD)
    sent = invitation_create(program=program, name=email.partition("@")[0], email=email)
    invitation_accept(sent.invitation, account=account)
    token = urlsplit(sent.link).path.rpartition("/")[2]
    return Partner.objects.get(workspace_id=program.workspace_id, account=account), token


# --- an invitation, and one session on every worker ----------------------------------------------------------------


def invitation_link(served: Served, offset: int, email: str) -> str:
    """The one-time link of the invitation emailed to `email` since `offset`: with no EMAIL_URL the server prints
    its emails, to the log here."""
    printed = log_since(served, offset)
    assert f"To: {email}" in printed, printed[-2000:]
    found = re.findall(rf"{re.escape(served.url)}(/portal/invitations/[A-Za-z0-9_-]+)", printed)
    assert len(found) == 1, printed[-2000:]
    return found[0]


def test_an_invited_partners_session_works_on_every_worker_until_signed_out_everywhere(served: Served):
    email = "pat.served@example.com"
    owner = UserFactory.create(username="portal-owner")
    program = ProgramFactory.create(
        name="Acme Served", workspace=MembershipFactory.create(user=owner, role=Role.OWNER).workspace
    )

    with httpx.Client(base_url=served.url, timeout=15) as dashboard:
        sign_in(dashboard, owner.username, f"/programs/{program.pk}/partners")
        offset = log_offset(served)
        invited = dashboard.post(
            f"/programs/{program.pk}/partners/invite",
            data={"name": "Pat", "email": email, "csrfmiddlewaretoken": dashboard.cookies["csrftoken"]},
        )
    assert invited.status_code == 302, invited.text[:300]
    link = invitation_link(served, offset, email)

    with browser_for(served) as browser, browser_for(served) as second_browser:
        token = csrf_token(browser, link)
        accepted = browser.post(
            link,
            data={"password": PARTNER_PASSWORD, "password2": PARTNER_PASSWORD, "csrfmiddlewaretoken": token},
        )
        assert accepted.status_code == 302 and accepted.headers["Location"] == COOKIE_PATH, accepted.text[:300]
        [cookie] = [value for value in accepted.headers.get_list("Set-Cookie") if value.startswith(f"{COOKIE}=")]
        assert "Path=/portal/" in cookie, cookie
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie, cookie
        first_key = browser.cookies[COOKIE]

        offset = log_offset(served)
        pages = send_concurrently(lambda n: browser.get(PAGES[n % len(PAGES)]), 4 * len(PAGES), threads=6)
        assert statuses(pages) == {200: 4 * len(PAGES)}
        assert all(email in page.text for page in pages)
        assert len(pids_since(served, offset, "/portal/")) >= 2
        # The link worked once.
        assert browser.get(link).status_code == 410

        second_key = portal_sign_in(second_browser, email)
        assert second_browser.get("/portal/").status_code == 200

        ended = browser.post("/portal/sign-out-everywhere", data={"csrfmiddlewaretoken": browser.cookies["csrftoken"]})
        assert ended.status_code == 302 and ended.headers["Location"] == "/portal/sign-in"
        assert COOKIE not in browser.cookies

    # Each browser's session, its cookie sent as it was, is over on every worker.
    keys = [first_key, second_key]
    offset = log_offset(served)
    with with_cookie(served, f"{COOKIE}={keys[0]}") as first, with_cookie(served, f"{COOKIE}={keys[1]}") as second:
        clients = [first, second]
        after = send_concurrently(lambda n: clients[n % 2].get(PAGES[n % len(PAGES)]), 4 * len(PAGES), threads=6)
    assert all(goes_to_portal_sign_in(response) for response in after), statuses(after)
    assert not any(email in response.text for response in after)
    assert len(pids_since(served, offset, "/portal/")) >= 2


# --- the dashboard's session and the portal's ----------------------------------------------------------------------


def test_an_owners_session_never_opens_the_portal_and_a_partners_never_opens_the_dashboard(served: Served):
    owner = UserFactory.create(username="portal-owner")
    program = ProgramFactory.create(workspace=MembershipFactory.create(user=owner, role=Role.OWNER).workspace)
    partner_email = "pia.partner@example.com"
    enrolled(program, partner_email)
    dashboard_paths = ("/", f"/programs/{program.pk}/", f"/programs/{program.pk}/partners")

    with httpx.Client(base_url=served.url, timeout=15) as dashboard:
        sign_in(dashboard, owner.username)
        assert all(dashboard.get(path).status_code == 200 for path in dashboard_paths)
        owner_key = dashboard.cookies["sessionid"]
        # The dashboard's cookie is sent to /portal/ too (its path is /): the portal reads its own only.
        as_owner = [dashboard.get(path) for path in PAGES]
    with with_cookie(served, f"{COOKIE}={owner_key}") as forged:
        as_owner += [forged.get(path) for path in PAGES]
    for path, response in zip(PAGES * 2, as_owner, strict=True):
        assert goes_to_portal_sign_in(response), (path, response.status_code)
        assert response.headers["Location"] == f"/portal/sign-in?next={quote(path, safe='')}"

    with browser_for(served) as browser:
        partner_key = portal_sign_in(browser, partner_email)
        assert browser.get("/portal/").status_code == 200
    # The portal's cookie is never sent to the dashboard's paths; forged onto them, as either cookie, it opens none.
    for cookie in (f"{COOKIE}={partner_key}", f"sessionid={partner_key}"):
        with with_cookie(served, cookie) as forged:
            for path in dashboard_paths:
                response = forged.get(path)
                assert response.status_code == 302, (cookie, path, response.status_code)
                assert response.headers["Location"].startswith("/accounts/login/"), (cookie, path)
            admin = forged.get("/admin/")
            assert admin.status_code == 302 and admin.headers["Location"].startswith("/admin/login/")
            api = forged.get(f"/api/tracking/status/{program.pk}")
            assert api.status_code in (401, 403), (cookie, api.status_code)
            assert partner_email not in api.text


# --- limits, counted once per instance -----------------------------------------------------------------------------


def test_of_11_sign_in_attempts_from_one_address_in_a_minute_exactly_10_are_answered(any_served: Served):
    email = "sam.signin@example.com"
    account_create(email, PARTNER_PASSWORD)

    with browser_for(any_served) as browser:
        token = csrf_token(browser, "/portal/sign-in")
        wrong = {"email": email, "password": "not the password at all", "csrfmiddlewaretoken": token}
        offset = log_offset(any_served)
        attempts = send_concurrently(lambda n: browser.post("/portal/sign-in", data=wrong), SIGN_IN_LIMIT + 1)
        # Past the limit the right password is refused as well: every attempt counts.
        right = browser.post("/portal/sign-in", data={**wrong, "password": PARTNER_PASSWORD})

    assert statuses(attempts) == {400: SIGN_IN_LIMIT, 429: 1}
    assert all(SIGN_IN_FAILED in attempt.text for attempt in attempts if attempt.status_code == 400)
    assert right.status_code == 429 and "Too many attempts" in right.text
    assert COOKIE not in right.headers.get("Set-Cookie", "")
    assert len(pids_since(any_served, offset, "/portal/sign-in")) >= 2
    if any_served.redis_url:
        assert redis.Redis.from_url(any_served.redis_url).keys("ratelimit:gunicorn-*:rl:*")
    # Another address has a bucket of its own; but the 10 failures, counted for the account by every worker alike,
    # lock it whatever the address (issue 37): the right password is refused there too, and another account opens.
    other_email = "sam.other@example.com"
    account_create(other_email, PARTNER_PASSWORD)
    with browser_for(any_served) as other:
        form = {**wrong, "password": PARTNER_PASSWORD, "csrfmiddlewaretoken": csrf_token(other, "/portal/sign-in")}
        locked = other.post("/portal/sign-in", data=form)
        assert locked.status_code == 429 and "Too many failed sign-ins with this email" in locked.text
        portal_sign_in(other, other_email)


def application_stamp(served: Served, program: Program, age_seconds: float) -> str:
    """The join form's signed stamp of when it was shown, `age_seconds` ago, signed with the server's own key (the
    conftest's server creates it beside its log): a form filled as slowly as a person fills it, without waiting."""
    key = served.log.with_name("secret_key").read_text().strip()
    shown = time.time() - age_seconds
    return signing.dumps({"p": program.pk, "t": shown}, key=key, salt=applications.STAMP_SALT, compress=True)


def test_of_6_applications_from_one_address_in_an_hour_exactly_5_are_taken(any_served: Served):
    program = ProgramFactory.create(applications_open=True)
    path = f"/join/{program.pk}"
    stamp = application_stamp(any_served, program, age_seconds=60)
    forms = [
        {
            "name": f"Applicant {n}",
            "email": f"applicant{n}@example.com",
            "website": "https://blog.example.com",
            "promotion": "A weekly newsletter for small shops.",
            "terms": "on",
            "stamp": stamp,
            applications.HONEYPOT: "",
        }
        for n in range(APPLICATION_LIMIT + 1)
    ]

    with browser_for(any_served, period=3600) as browser:
        token = csrf_token(browser, path)
        offset = log_offset(any_served)
        answers = send_concurrently(
            lambda n: browser.post(path, data={**forms[n], "csrfmiddlewaretoken": token}), len(forms)
        )

    assert statuses(answers) == {200: APPLICATION_LIMIT, 429: 1}
    assert all(applications.TOO_MANY in answer.text for answer in answers if answer.status_code == 429)
    taken = {form["email"] for form, answer in zip(forms, answers, strict=True) if answer.status_code == 200}
    stored = set(PartnerApplication.objects.filter(program=program).values_list("email", flat=True))
    assert stored == taken
    assert len(pids_since(any_served, offset, path)) >= 2


# --- one partner's ids and cursors in another's session ------------------------------------------------------------


def test_a_partner_asking_for_another_partners_ids_and_cursors_gets_nothing_of_theirs(served: Served):
    alpha = ProgramFactory.create(name="Alpha Program", partner_codes_allowed=True, hold_days=30)
    beta = ProgramFactory.create(name="Beta Hidden Program", partner_codes_allowed=True, hold_days=30)
    ann, _ = enrolled(alpha, "ann.alpha@example.com")
    # Bo is Ann's fellow partner in Alpha, and a partner of Beta (another workspace) too.
    bo_in_alpha, _ = enrolled(alpha, "bo.beta@example.com")
    bo_in_beta, bo_token = enrolled(beta, "bo.beta@example.com")
    bo_invitation = PartnerInvitation.objects.get(program=beta)

    paid_by_paypal(ann, "ann-paypal@example.com")
    paid_by_paypal(bo_in_alpha, "bo-paypal@example.com")
    ReferralLinkFactory.create(program=alpha, partner=ann, short_link="ann-alpha-code")
    paid_out(ann, alpha, [10_000])  # 20.00 USD
    commission_for(ann, alpha, amount=20_000)  # 40.00 USD, pending
    bo_link = ReferralLinkFactory.create(program=alpha, partner=bo_in_alpha, short_link="bo-alpha-code")
    ReferralLinkFactory.create(program=beta, partner=bo_in_beta, short_link="bo-beta-code")
    bo_payout = paid_out(bo_in_alpha, alpha, [98_765])  # 197.53 USD
    paid_out(bo_in_beta, beta, [55_555])  # 111.11 USD
    bo_commission = commission_for(bo_in_alpha, alpha, amount=43_210)  # 86.42 USD, pending
    bo_alpha_commission = Commission.objects.filter(partner=bo_in_alpha).order_by("created_at").first()
    assert bo_alpha_commission is not None
    bos = (
        "bo.beta@example.com",
        "bo-paypal@example.com",
        "Beta Hidden Program",
        "bo-alpha-code",
        "bo-beta-code",
        "197.53 USD",
        "987.65 USD",
        "111.11 USD",
        "555.55 USD",
        "86.42 USD",
        "432.10 USD",
    )

    with browser_for(served) as bo:
        portal_sign_in(bo, "bo.beta@example.com")
        # Bo's own pages show what the markers name, so their absence from Ann's means something.
        bo_pages = "".join(bo.get(path).text for path in ("/portal/links", "/portal/commissions", "/portal/payouts"))
    assert [marker for marker in bos if marker not in bo_pages] == []

    commission_cursor, payout_cursor = cursor_of(bo_commission), cursor_of(bo_payout)
    asks = [
        (f"/portal/links?created={bo_link.pk}", 200),
        (f"/portal/performance?program={beta.pk}", 404),
        (f"/portal/performance?link={bo_link.pk}", 404),
        (f"/portal/performance?program={alpha.pk}&link={bo_link.pk}", 404),
        (f"/portal/commissions?program={beta.pk}", 404),
        (f"/portal/commissions?before={commission_cursor}", 200),
        (f"/portal/commissions?after={cursor_of(bo_alpha_commission)}", 200),
        (f"/portal/commissions?program={alpha.pk}&after={commission_cursor}", 200),
        ("/portal/balance?page=2", 200),
        (f"/portal/payouts?before={payout_cursor}", 200),
        (f"/portal/payouts?after={payout_cursor}", 200),
        # An invitation is named by its token: Bo's used one, and Bo's invitation's id as if it were a token.
        (f"/portal/invitations/{bo_token}", 410),
        (f"/portal/invitations/{bo_invitation.pk}", 404),
    ]
    with browser_for(served) as ann_browser:
        portal_sign_in(ann_browser, "ann.alpha@example.com")
        own = ann_browser.get("/portal/commissions").text + ann_browser.get("/portal/payouts").text
        answers = [ann_browser.get(path) for path, _ in asks]
        token = ann_browser.cookies["csrftoken"]
        link_in_beta = ann_browser.post(
            "/portal/links", data={"program": beta.pk, "code": "ann-in-beta", "csrfmiddlewaretoken": token}
        )
        joined_beta = ann_browser.post(
            f"/portal/invitations/{bo_token}", data={"password": PARTNER_PASSWORD, "csrfmiddlewaretoken": token}
        )
    assert "40.00 USD" in own and "20.00 USD" in own  # Ann's own rows are there to be shown

    for (path, status), answer in zip(asks, answers, strict=True):
        assert answer.status_code == status, (path, answer.status_code)
        assert [marker for marker in bos if marker in answer.text] == [], path
    assert link_in_beta.status_code == 400
    assert joined_beta.status_code == 410
    for answer in (link_in_beta, joined_beta):
        assert [marker for marker in bos if marker in answer.text] == []
    assert not ReferralLink.objects.filter(short_link="ann-in-beta").exists()
    assert not PartnerProgram.objects.filter(program=beta, partner__account__email="ann.alpha@example.com").exists()


# --- CSRF ----------------------------------------------------------------------------------------------------------


def test_a_portal_post_without_its_csrf_token_is_refused_and_changes_nothing(served: Served):
    program = ProgramFactory.create()
    partner, _ = enrolled(program, "cy.csrf@example.com")
    assert partner.account is not None
    epoch = partner.account.session_epoch

    with browser_for(served) as browser:
        portal_sign_in(browser, "cy.csrf@example.com")
        refused = [
            browser.post("/portal/sign-out-everywhere"),
            browser.post("/portal/sign-out-everywhere", data={"csrfmiddlewaretoken": "x" * 64}),
            browser.post("/portal/payouts/manual", data={"rail": Rail.PAYPAL, "payout_email": "cy@example.com"}),
            browser.post("/portal/sign-in", data={"email": "cy.csrf@example.com", "password": PARTNER_PASSWORD}),
        ]
        still_in = browser.get("/portal/")

    assert [response.status_code for response in refused] == [403] * 4
    assert still_in.status_code == 200 and "cy.csrf@example.com" in still_in.text
    partner.account.refresh_from_db()
    assert partner.account.session_epoch == epoch
    assert not PayoutAccount.objects.filter(account=partner.account).exists()


# --- the payouts' Stripe webhook -----------------------------------------------------------------------------------


def stripe_account(account_id: str) -> dict[str, Any]:
    """A connected Express account as account.updated carries it once onboarding is finished."""
    return {
        "id": account_id,
        "object": "account",
        "type": "express",
        "payouts_enabled": True,
        "details_submitted": True,
        "capabilities": {"transfers": "active"},
        "requirements": {"currently_due": [], "past_due": [], "disabled_reason": None},
    }


def post_signed(client: httpx.Client, payload: dict[str, Any], secret: str) -> httpx.Response:
    body, signature = signed(payload, secret)
    return client.post(
        WEBHOOK, content=body, headers={"Content-Type": "application/json", "Stripe-Signature": signature}
    )


def test_payout_events_signed_with_either_secret_are_applied_on_every_worker(served: Served):
    partner, _ = enrolled(ProgramFactory.create(), "dee.stripe@example.com")
    assert partner.account is not None
    PayoutAccount.objects.create(account=partner.account, rail=Rail.STRIPE, stripe_account_id="acct_1ServedDee")
    # Transfers of payouts this installation never made: verified, and nothing to apply.
    unknown = [
        event("transfer.created", {"id": f"tr_{n}", "object": "transfer", "amount": 100, "transfer_group": "x"})
        for n in range(11)
    ]

    offset = log_offset(served)
    with httpx.Client(base_url=served.url, timeout=15) as stripe:
        updated = post_signed(
            stripe, event("account.updated", stripe_account("acct_1ServedDee"), "acct_1ServedDee"), PAYOUT_SECRETS[0]
        )
        others = send_concurrently(lambda n: post_signed(stripe, unknown[n], PAYOUT_SECRETS[n % 2]), len(unknown))

    assert updated.status_code == 200, updated.text
    assert updated.json() == {"received": True, "applied": "account updated"}
    assert [response.json() for response in others] == [{"received": True, "applied": None}] * len(unknown)
    assert len(pids_since(served, offset, WEBHOOK)) >= 2
    payout_account = PayoutAccount.objects.get(account=partner.account)
    assert (payout_account.payouts_enabled, payout_account.transfers_active, payout_account.ready) == (True, True, True)


def test_unsigned_forged_or_junk_webhook_bodies_never_get_a_5xx(served: Served):
    partner, _ = enrolled(ProgramFactory.create(), "eve.junk@example.com")
    assert partner.account is not None
    PayoutAccount.objects.create(account=partner.account, rail=Rail.STRIPE, stripe_account_id="acct_1ServedEve")
    body = json.dumps(event("account.updated", stripe_account("acct_1ServedEve"), "acct_1ServedEve"))
    secret = PAYOUT_SECRETS[0]
    now = int(time.time())

    def signed_body(payload: object) -> tuple[str, str]:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        return text, sign(text, secret)

    cases: list[tuple[str, str | bytes, str | None, int]] = [
        # (case, body, Stripe-Signature, status)
        ("unsigned", body, None, 400),
        ("empty signature", body, "", 400),
        ("forged signature", body, "t=1,v1=00", 400),
        ("signed with another secret", body, sign(body, "whsec_someone_else"), 400),
        ("signature expired", body, sign(body, secret, timestamp=now - 3600), 400),
        ("another body's signature", body, sign(body.replace("true", "false"), secret), 400),
        ("signature without v1", body, f"t={now}", 400),
        ("empty body", *signed_body(""), 400),
        ("not JSON", *signed_body("{'type': 'account.updated',"), 400),
        ("not UTF-8", b'{"type": "\xc3\x28"}', "t=1,v1=00", 400),
        ("a JSON list", *signed_body([json.loads(body)]), 400),
        ("a JSON string", *signed_body("account.updated"), 400),
        ("data not an object", *signed_body({"type": "account.updated", "data": "acct_1ServedEve"}), 400),
        ("data.object not an object", *signed_body({"type": "account.updated", "data": {"object": []}}), 400),
        ("deep JSON", "[" * 100_000 + "]" * 100_000, "t=1,v1=00", 400),
        ("3 MB body", "[" + "1," * 1_500_000 + "1]", "t=1,v1=00", 413),
        # Verified, and no event of the payouts': nothing applied.
        ("type not a string", *signed_body({"type": ["account.updated"], "data": {"object": {}}}), 200),
    ]

    offset = log_offset(served)
    with httpx.Client(base_url=served.url, timeout=30) as stripe:
        answers = {}
        for case, content, signature, _ in cases:
            headers = {"Content-Type": "application/json"}
            if signature is not None:
                headers["Stripe-Signature"] = signature
            answers[case] = stripe.post(WEBHOOK, content=content, headers=headers)
        not_posted = stripe.get(WEBHOOK)

    assert {case: answer.status_code for case, answer in answers.items()} == {
        case: status for case, _, _, status in cases
    }
    assert all(answers[case].json().get("received") is False for case, _, _, status in cases if status == 400)
    assert not_posted.status_code == 405
    assert "Traceback" not in log_since(served, offset)
    payout_account = PayoutAccount.objects.get(account=partner.account)
    assert (payout_account.payouts_enabled, payout_account.transfers_active) == (False, False)
    assert not Payout.objects.exists()
