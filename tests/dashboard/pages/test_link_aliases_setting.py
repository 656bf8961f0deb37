"""The Overview page's link parameters (programs.link_aliases): owners and admins add an old platform's query
parameter; a member sees them and cannot change them; unusable names change nothing."""

import pytest

from programs.link_aliases import ALIAS_RESERVED
from tests.factories import ReferralLinkFactory

pytestmark = pytest.mark.django_db


def url(program) -> str:
    return f"/programs/{program.pk}/link-aliases"


def aliases_of(program) -> list[str]:
    program.refresh_from_db()
    return program.link_aliases


def test_an_owner_adds_aliases_in_order_and_turns_them_off(owner_client, program):
    response = owner_client.post(url(program), {"link_aliases": " FPR, ref  gspk "}, follow=True)
    assert response.redirect_chain == [(f"/programs/{program.pk}/", 302)]
    assert aliases_of(program) == ["fpr", "ref", "gspk"]
    page = response.content.decode()
    assert "Links now also carry the code in ?fpr=, ?ref=, ?gspk=" in page
    assert "<code>?fpr=</code>, <code>?ref=</code>, <code>?gspk=</code>" in page
    assert 'value="fpr, ref, gspk"' in page

    off = owner_client.post(url(program), {"link_aliases": ""}, follow=True).content.decode()
    assert aliases_of(program) == []
    assert "Link aliases are off" in off and "(no aliases)" in off


def test_an_admin_may_a_member_may_not(admin_role_client, member_client, program):
    assert admin_role_client.post(url(program), {"link_aliases": "fpr"}).status_code == 302
    assert aliases_of(program) == ["fpr"]
    assert member_client.post(url(program), {"link_aliases": "ref"}).status_code == 403
    assert aliases_of(program) == ["fpr"]
    page = member_client.get(f"/programs/{program.pk}/").content.decode()
    assert "<code>?fpr=</code>" in page and 'name="link_aliases"' not in page


def test_an_outsider_and_a_get_change_nothing(outsider_client, owner_client, program):
    assert outsider_client.post(url(program), {"link_aliases": "fpr"}).status_code in (403, 404)
    assert owner_client.get(url(program)).status_code == 405
    assert aliases_of(program) == []


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("via", ALIAS_RESERVED.format(name="via")),
        ("fpr, fpr", "&#x27;fpr&#x27; is listed twice in link_aliases"),
        ("a b c d e f", "link_aliases holds at most 5 names"),
        ("9lives", "&#x27;9lives&#x27; is not a usable link alias"),
        ("fp-r", "&#x27;fp-r&#x27; is not a usable link alias"),
    ],
)
def test_unusable_names_are_refused_and_change_nothing(owner_client, program, typed, message):
    program.link_aliases = ["ref"]
    program.save(update_fields=["link_aliases"])
    page = owner_client.post(url(program), {"link_aliases": typed}, follow=True).content.decode()
    assert message.replace("'", "&#x27;") in page
    assert aliases_of(program) == ["ref"]


def test_a_saved_alias_answers_clicks_at_once(owner_client, program, client):
    ReferralLinkFactory(program=program, short_link="moved")
    body = {"affiliate_url": "https://acme.example.com/?fpr=moved", "program_id": program.pk}
    assert client.post("/api/v1/track/click", body, content_type="application/json").status_code == 400
    owner_client.post(url(program), {"link_aliases": "fpr"})
    response = client.post("/api/v1/track/click", body, content_type="application/json")
    assert response.status_code == 200 and response.json()["partner_code"] == "moved"
