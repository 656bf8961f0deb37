"""Schemathesis against the published OpenAPI (/api/schema/), in process through WSGI, with every check on:
no 5xx, every response (status, body, content type, headers) as documented, schema-invalid input refused,
auth enforced where declared. Bounded and deterministic (derandomized, no example database).

A signed-in owner, a program with a known key, a referral link, a customer and a recorded sale exist, and
half of the well-formed cases are rewritten to use them, so generated calls reach past the lookups."""

from dataclasses import dataclass

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from cli_api.services import cli_token_create
from tests.factories import (
    CommissionFactory,
    CustomerFactory,
    MembershipFactory,
    ProgramFactory,
    ReferralLinkFactory,
    SaleFactory,
)

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


@dataclass
class World:
    program_id: int
    spare_program_id: int
    program_key: str
    affiliate_url: str
    click_id: str
    customer_key: str
    refundable_transaction_id: str
    session_id: str
    owner: object

    def login_token(self) -> str:
        return cli_token_create(user=self.owner)[1]


WORLD: dict[str, World] = {}


@pytest.fixture(autouse=True)
def world(db, settings):
    # Every generated call counts against the real limits; 429 is documented, but it must not hide the rest.
    settings.RATELIMIT_SCALE = 1000
    # Django's handler closes the connection at each request's end; the test's transaction must survive it
    # (django.test.Client does the same).
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    membership = MembershipFactory()
    program = ProgramFactory(workspace=membership.workspace)
    link = ReferralLinkFactory(program=program)
    customer = CustomerFactory(link=link, customer_key="fuzz-customer")
    sale = SaleFactory(customer=customer, processor_event_id="fuzz-sale-1")
    CommissionFactory(sale=sale)
    browser = Client()
    browser.force_login(membership.user)
    WORLD["current"] = World(
        program_id=program.pk,
        spare_program_id=ProgramFactory(workspace=membership.workspace).pk,
        program_key=program.raw_api_key,
        affiliate_url=f"https://{program.domain}/pricing?aff={link.short_link}",
        click_id=customer.click_id,
        customer_key=customer.customer_key,
        refundable_transaction_id=sale.processor_event_id,
        session_id=browser.cookies["sessionid"].value,
        owner=membership.user,
    )
    yield
    WORLD.clear()
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def _security(case) -> set[str]:
    return {name for requirement in case.operation.definition.raw.get("security", []) for name in requirement}


@schema.auth(refresh_interval=None)
class Credentials:
    """The real credential each operation declares: program key, login token or dashboard session."""

    def get(self, case, ctx):
        return WORLD.get("current")

    def set(self, case, world: World, ctx):
        schemes = _security(case)
        if "programKey" in schemes:
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {world.program_key}"}
        if "loginToken" in schemes:
            # A fresh token per call: logout revokes the one it is sent.
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {world.login_token()}"}
        if "dashboardSession" in schemes:
            case.cookies = {**(case.cookies or {}), "sessionid": world.session_id, "csrftoken": CSRF_TOKEN}
            case.headers = {**(case.headers or {}), "X-CSRFToken": CSRF_TOKEN}


def _known_body(case, world: World) -> dict:
    known = {
        "affiliate_url": world.affiliate_url,
        "click_id": world.click_id,
        "existing_click_id": world.click_id,
        "customer_key": world.customer_key,
        "program_id": world.program_id,
    }
    if case.operation.path == "/api/v1/track/refund":
        known["transaction_id"] = world.refundable_transaction_id
    return {**case.body, **{name: value for name, value in known.items() if name in case.body}}


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    """A well-formed (integer) program id in the path is also tried as the fixture's program. Done here, not in
    flatmap_case: schemathesis re-checks a changed path parameter in its string form and would call it invalid."""
    world = WORLD.get("current")
    generated = (path_parameters or {}).get("program_id")
    if world is None or isinstance(generated, bool) or not isinstance(generated, int):
        return st.just(path_parameters)
    # Regenerating the fixture program's key would lock the other operations out.
    regenerates = context.operation.path.endswith("/regenerate-key")
    known = world.spare_program_id if regenerates else world.program_id
    return st.sampled_from([path_parameters, {**path_parameters, "program_id": known}])


@schema.hook
def flatmap_case(context, case):
    """Well-formed bodies and queries also come with the fixture's ids, so the deep paths run. Schema-invalid
    cases are left as generated: their point is the invalid part."""
    world = WORLD.get("current")
    if world is None or case.meta is None or not case.meta.generation.mode.is_positive:
        return st.just(case)
    enriched = case.derive(keep_auth=True)
    if isinstance(case.body, dict):
        enriched.body = _known_body(case, world)
    if "program_id" in case.query:
        enriched.query["program_id"] = world.program_id
    return st.sampled_from([case, enriched])


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
