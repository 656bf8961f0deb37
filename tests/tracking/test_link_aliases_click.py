"""POST /api/v1/track/click with a program's link aliases (programs.link_aliases): an old platform's parameter
(?fpr=, ?ref=) answers clicks for the program that lists it; aff wins, then via, then the aliases in order."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core import messages
from core.sql import capabilities
from tests.factories import ProgramFactory, ReferralLinkFactory
from tests.helpers import REQUEST_LOG_ROW, bad_request
from tracking.models import ClickEvent, Customer

pytestmark = pytest.mark.django_db

URL = "/api/v1/track/click"


@pytest.fixture
def program():
    return ProgramFactory(link_aliases=["fpr", "ref"])


@pytest.fixture
def link(program):
    return ReferralLinkFactory(program=program, short_link="oldcode")


def click(api_client, query: str, **body):
    return api_client.post(URL, {"affiliate_url": f"https://shop.example.com/?{query}", **body}, format="json")


class TestAliasClick:
    def test_an_alias_answers_for_the_partner_of_the_program_named_in_the_body(self, api_client, program, link):
        response = click(api_client, "fpr=oldcode", program_id=program.pk)
        assert response.status_code == 200, response.json()
        assert response.json()["partner_code"] == "oldcode"
        event = ClickEvent.objects.get()
        assert (event.link_id, event.partner_id, event.program_id) == (link.pk, link.partner_id, program.pk)
        assert Customer.objects.get(click_id=response.json()["click_id"]).first_partner_id == link.partner_id

    def test_additional_data_program_id_names_the_program_too(self, api_client, program, link):
        response = click(api_client, "ref=oldcode", additional_data={"program_id": program.pk})
        assert response.status_code == 200, response.json()
        assert ClickEvent.objects.get().link_id == link.pk

    def test_a_numeric_string_program_id_is_accepted(self, api_client, program, link):
        assert click(api_client, "fpr=oldcode", program_id=str(program.pk)).status_code == 200

    def test_aff_wins_then_via_then_the_aliases_in_their_order(self, api_client, program, link):
        other = ReferralLinkFactory(program=program, short_link="newcode")
        third = ReferralLinkFactory(program=program, short_link="thirdcode")
        cases = [
            ("fpr=oldcode&aff=newcode", other),
            ("fpr=oldcode&via=newcode", other),
            ("ref=thirdcode&fpr=oldcode", link),  # fpr is listed first
            ("ref=thirdcode&fpr=", third),  # a blank alias is no code
        ]
        for query, expected in cases:
            response = click(api_client, query, program_id=program.pk)
            assert response.status_code == 200, (query, response.json())
            assert response.json()["partner_code"] == expected.short_link, query

    def test_without_aliases_the_parameter_is_no_code(self, api_client, link):
        plain = ProgramFactory()
        ReferralLinkFactory(program=plain, short_link="plaincode")
        response = click(api_client, "fpr=plaincode", program_id=plain.pk)
        assert response.json() == bad_request(messages.NO_AFF_PARAMETER)
        assert not ClickEvent.objects.exists()

    def test_without_a_program_an_alias_is_no_code(self, api_client, link):
        # An alias is a program's: the spec's error stays for a call that names none.
        response = click(api_client, "fpr=oldcode")
        assert response.json() == bad_request(messages.NO_AFF_PARAMETER)
        assert not ClickEvent.objects.exists()

    def test_an_unknown_or_malformed_program_keeps_the_spec_error(self, api_client, link):
        for program_id in (999_999, "abc", ""):
            response = click(api_client, "fpr=oldcode", additional_data={"program_id": 1}, program_id=program_id)
            assert response.status_code == 400
        assert click(api_client, "fpr=oldcode", program_id=999_999).json() == bad_request(messages.NO_AFF_PARAMETER)
        assert not ClickEvent.objects.exists()

    def test_an_alias_finds_only_the_programs_own_links(self, api_client, program, link):
        # The code is another program's link: this program's alias does not reach it.
        ReferralLinkFactory(short_link="elsewhere")
        response = click(api_client, "fpr=elsewhere", additional_data={"program_id": program.pk})
        assert response.json() == bad_request(messages.REFERRAL_LINK_NOT_FOUND)
        assert not ClickEvent.objects.exists()

    def test_a_nul_in_an_alias_is_an_invalid_url(self, api_client, program, link):
        response = click(api_client, "fpr=%00", program_id=program.pk)
        assert response.json() == bad_request(messages.INVALID_AFFILIATE_URL)

    def test_a_change_of_aliases_counts_at_once(self, api_client, program, link):
        assert click(api_client, "fpr=oldcode", program_id=program.pk).status_code == 200
        program.link_aliases = []
        program.save(update_fields=["link_aliases"])
        response = click(api_client, "fpr=oldcode", program_id=program.pk)
        assert response.json() == bad_request(messages.NO_AFF_PARAMETER)


class TestPartnerStackLinks:
    def test_gspk_carries_the_partner_key_in_base64(self, api_client):
        # partnerlinks.io redirects to the site with ?gspk=<partner key, Base64>; the imported code is the key.
        program = ProgramFactory(link_aliases=["gspk"])
        link = ReferralLinkFactory(program=program, short_link="jane_partner")
        for encoded in ("amFuZV9wYXJ0bmVy", "amFuZV9wYXJ0bmVy%3D%3D"):
            response = click(api_client, f"gspk={encoded}&gsxid=xyz", program_id=program.pk)
            assert response.status_code == 200, response.json()
            assert response.json()["partner_code"] == link.short_link

    def test_a_gspk_value_that_is_no_base64_code_is_looked_up_as_it_is(self, api_client):
        program = ProgramFactory(link_aliases=["gspk"])
        ReferralLinkFactory(program=program, short_link="jane")
        assert click(api_client, "gspk=jane", program_id=program.pk).json()["partner_code"] == "jane"

    def test_other_aliases_are_never_decoded(self, api_client, program):
        ReferralLinkFactory(program=program, short_link="jane")
        response = click(api_client, "fpr=amFuZQ", program_id=program.pk)
        assert response.json() == bad_request(messages.REFERRAL_LINK_NOT_FOUND)


class TestQueries:
    """The alias list is read only when neither aff nor via carries a code."""

    def _count(self, api_client, query: str, program_id: int) -> tuple[int, list[str]]:
        with CaptureQueriesContext(connection) as captured:
            assert click(api_client, query, program_id=program_id).status_code == 200
        return len(captured), [q["sql"] for q in captured.captured_queries]

    def test_an_aff_click_reads_no_alias(self, api_client, program, link, django_assert_num_queries):
        # As TestHotPath in test_track_click: link, fraud settings, SAVEPOINT, the insert(s), RELEASE, the log row.
        inserts = 1 if capabilities().insert_in_with else 2
        with django_assert_num_queries(4 + inserts + REQUEST_LOG_ROW):
            assert click(api_client, "aff=oldcode&fpr=x", program_id=program.pk).status_code == 200
        with CaptureQueriesContext(connection) as captured:
            assert click(api_client, "via=oldcode", program_id=program.pk).status_code == 200
        assert not [q for q in captured.captured_queries if "link_aliases" in q["sql"]]

    def test_an_alias_click_adds_one_read_then_none(self, api_client, program, link):
        # The aff click reads (and caches) the link and the program's fraud settings, never the aliases.
        self._count(api_client, "aff=oldcode", program.pk)
        warm, _ = self._count(api_client, "aff=oldcode", program.pk)
        first, sqls = self._count(api_client, "fpr=oldcode", program.pk)
        second, _ = self._count(api_client, "fpr=oldcode", program.pk)
        assert sum("link_aliases" in sql for sql in sqls) == 1
        assert (first, second) == (warm + 1, warm)


def test_the_openapi_description_of_the_click_names_the_aliases(api_client):
    paths = api_client.get("/api/schema/", {"format": "json"}).json()
    body = paths["paths"][URL]["post"]["requestBody"]["content"]["application/json"]["schema"]
    component = paths["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
    description = component["properties"]["affiliate_url"]["description"]
    assert "link aliases" in description and "aff wins" in description
