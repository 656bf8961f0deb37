"""Schemathesis against the published OpenAPI (/api/schema/), in process through WSGI, with every check on:
no 5xx, every response (status, body, content type, headers) as documented, schema-invalid input refused,
auth enforced where declared. Bounded and deterministic (derandomized, no example database).

A signed-in owner, a program with a known key, a login token, a referral link, a customer and a recorded sale
exist; well-formed fuzzing cases are rewritten to use them, so generated calls reach past the lookups. Rate
limits are scaled up (429 is documented; it must not hide everything else)."""

import tempfile
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from django.contrib.sessions.models import Session
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from cli_api.models import CliToken
from cli_api.services import cli_token_create
from programs.keys import key_digest
from programs.models import AGENT_SCOPES, AgentKey
from programs.services import agent_key_create, program_key_install
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    MembershipFactory,
    ProgramFactory,
    ReferralLinkFactory,
    SaleFactory,
)

# Hypothesis keeps caches (unicode tables, constants) in its home directory; keep them out of the checkout.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "svc-hypothesis")

CSRF_TOKEN = "fuzz" * 8
# The spec answers 400 when a well-formed identifier resolves to nothing usable (an unknown referral code,
# customer or program_id), so schema-valid data may be refused with 400 as well as with 401/403/404/409/410/422.
ACCEPTED_STATUSES_FOR_VALID_DATA = ["2xx", "3xx", "400", "401", "403", "404", "409", "410", "422", "429"]

CONFIG = schemathesis.Config.from_dict(
    {
        "checks": {"positive_data_acceptance": {"expected-statuses": ACCEPTED_STATUSES_FOR_VALID_DATA}},
        # Credentials come from the fixture (Credentials below), not from generated headers and cookies.
        "generation": {"with-security-parameters": False},
    }
)
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application(), config=CONFIG)


# Fixed credentials and ids: schemathesis builds its coverage-phase cases when the tests are collected, before
# any fixture runs, so what those cases carry must be known in advance. Each operation's test creates them anew.
WORKSPACE_ID = 910001
PROGRAM_ID = 910001
PROGRAM_KEY = "aff_fuzz" + "k" * 40
LOGIN_TOKEN = "svcl_fuzz" + "t" * 40
SESSION_ID = "fuzz" + "s" * 28
AGENT_KEY = "agt_fuzz" + "a" * 39
LINK_CODE = "fuzzlink"
AFFILIATE_URL = f"https://shop.fuzz.example/pricing?aff={LINK_CODE}"
CLICK_ID = "fuzz-click"
CUSTOMER_KEY = "fuzz-customer"
SALE_TRANSACTION_ID = "fuzz-sale-1"


@pytest.fixture(autouse=True)
def world(db, settings):
    # Every generated call counts against the real limits; 429 is documented, but it must not hide the rest.
    settings.RATELIMIT_SCALE = 1000
    # Django's handler closes the connection at each request's end; the test's transaction must survive it
    # (django.test.Client does the same).
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    membership = MembershipFactory(workspace__id=WORKSPACE_ID)
    owner = membership.user
    program = ProgramFactory(id=PROGRAM_ID, workspace=membership.workspace, domain="shop.fuzz.example")
    program_key_install(program=program, raw_key=PROGRAM_KEY)
    link = ReferralLinkFactory(program=program, short_link=LINK_CODE)
    customer = CustomerFactory(link=link, click_id=CLICK_ID, customer_key=CUSTOMER_KEY)
    CommissionFactory(sale=SaleFactory(customer=customer, processor_event_id=SALE_TRANSACTION_ID))
    agent_key, _ = agent_key_create(workspace=membership.workspace, name="fuzz", scopes=AGENT_SCOPES)
    AgentKey.objects.filter(pk=agent_key.pk).update(digest=key_digest(AGENT_KEY), last4=AGENT_KEY[-4:])
    token, _ = cli_token_create(user=owner)
    CliToken.objects.filter(pk=token.pk).update(digest=key_digest(LOGIN_TOKEN), last4=LOGIN_TOKEN[-4:])
    browser = Client()
    browser.force_login(owner)
    Session.objects.filter(session_key=browser.session.session_key).update(session_key=SESSION_ID)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@schema.auth(refresh_interval=None)
class Credentials:
    """The credential each operation declares: program key, login token, agent key or dashboard session (with
    CSRF)."""

    def get(self, case, ctx):
        return {name for requirement in case.operation.definition.raw.get("security", []) for name in requirement}

    def set(self, case, schemes: set[str], ctx):
        if "programKey" in schemes:
            case.headers["Authorization"] = f"Bearer {PROGRAM_KEY}"
        if "loginToken" in schemes:
            case.headers["Authorization"] = f"Bearer {LOGIN_TOKEN}"
        if "agentKey" in schemes:
            case.headers["Authorization"] = f"Bearer {AGENT_KEY}"
        if "dashboardSession" in schemes:
            case.cookies = {**(case.cookies or {}), "sessionid": SESSION_ID, "csrftoken": CSRF_TOKEN}
            case.headers["X-CSRFToken"] = CSRF_TOKEN


KNOWN_BODY_VALUES = {
    "affiliate_url": AFFILIATE_URL,
    "click_id": CLICK_ID,
    "existing_click_id": CLICK_ID,
    "customer_key": CUSTOMER_KEY,
    "program_id": PROGRAM_ID,
    "advertiser_id": WORKSPACE_ID,
}


def _known_body(case) -> dict[str, Any]:
    body = {**case.body, **{name: value for name, value in KNOWN_BODY_VALUES.items() if name in case.body}}
    path = case.operation.path
    if path == "/api/v1/track/refund":
        body["transaction_id"] = SALE_TRANSACTION_ID
    elif path == "/api/v1/track/sale" and "click_id" not in body:
        body["customer_key"] = CUSTOMER_KEY
    elif path == "/api/v1/track/lead" and "click_id" not in body:
        body["click_id"] = CLICK_ID
    return body


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    """A well-formed (integer) program id in the path becomes the fixture's program (the coverage phase still
    sends unknown ids). Done here, not in
    flatmap_case: schemathesis re-checks a changed path parameter in its string form and would call it invalid."""
    generated = (path_parameters or {}).get("program_id")
    if isinstance(generated, bool) or not isinstance(generated, int):
        return st.just(path_parameters)
    return st.just({**path_parameters, "program_id": PROGRAM_ID})


@schema.hook
def flatmap_case(context, case):
    """Well-formed bodies and queries use the fixture's ids, so the deep paths run (the coverage phase still
    sends unknown ones). Schema-invalid cases are left as generated: their point is the invalid part."""
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return st.just(case)
    enriched = case.derive(keep_auth=True)
    if isinstance(case.body, dict):
        enriched.body = _known_body(case)
    if "program_id" in case.query:
        enriched.query["program_id"] = PROGRAM_ID
    return st.just(enriched)


@schema.parametrize()
@settings(
    max_examples=15,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_matches_its_published_openapi(case):
    case.call_and_validate()
