import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from programs.models import Action, Membership, Program, ReferralLink
from programs.selectors import program_key_get_by_raw

pytestmark = pytest.mark.django_db


def run_demo() -> dict[str, Any]:
    out = StringIO()
    call_command("demo", "--json", stdout=out)
    return json.loads(out.getvalue())


def test_the_json_contract_has_exactly_the_promised_keys():
    demo = run_demo()
    assert set(demo) == {"workspace_id", "programs", "links", "users"}
    assert set(demo["programs"]) == {"main", "instant", "strict", "legacy"}
    main = demo["programs"]["main"]
    assert set(main) == {
        "id",
        "api_key",
        "test_api_key",
        "cookie_window_days",
        "commission_type",
        "commission_rate",
        "hold_days",
    }
    assert (
        main["cookie_window_days"],
        main["commission_type"],
        main["commission_rate"],
        main["hold_days"],
    ) == (30, "percent", 20, 30)
    instant = demo["programs"]["instant"]
    assert set(instant) == {
        "id",
        "api_key",
        "test_api_key",
        "commission_type",
        "commission_rate",
        "hold_days",
    }
    assert (instant["commission_type"], instant["commission_rate"], instant["hold_days"]) == (
        "percent",
        10,
        0,
    )
    strict = demo["programs"]["strict"]
    assert set(strict) == {"id", "api_key", "test_api_key", "lead_auth"} and strict["lead_auth"] == "server_required"
    assert set(demo["programs"]["legacy"]) == {"id", "api_key"}
    assert set(demo["links"]) == {
        "main",
        "main_second_partner",
        "main_inactive",
        "instant",
        "strict",
        "legacy",
    }
    assert set(demo["users"]) == {"owner", "member", "outsider"}
    for user in demo["users"].values():
        assert set(user) == {"username", "password"}


def test_the_keys_links_and_users_are_real():
    demo = run_demo()
    for name, program in demo["programs"].items():
        key = program_key_get_by_raw(program["api_key"])
        assert key is not None and key.program_id == program["id"] and key.mode == "live", name
        if "test_api_key" in program:
            assert program_key_get_by_raw(program["test_api_key"]).mode == "test"
    assert not demo["programs"]["legacy"]["api_key"].startswith("aff_")
    assert demo["programs"]["main"]["api_key"].startswith("aff_")

    links = {code: ReferralLink.objects.get(short_link=code) for code in demo["links"].values()}
    assert [code for code, link in links.items() if not link.is_active] == [demo["links"]["main_inactive"]]
    main_links = [demo["links"][n] for n in ("main", "main_second_partner", "main_inactive")]
    assert {links[c].program_id for c in main_links} == {demo["programs"]["main"]["id"]}
    assert links[demo["links"]["main"]].partner_id != links[demo["links"]["main_second_partner"]].partner_id

    programs = Program.objects.filter(pk__in=[p["id"] for p in demo["programs"].values()])
    assert {p.workspace_id for p in programs} == {demo["workspace_id"]}
    users = {label: authenticate(**creds) for label, creds in demo["users"].items()}
    assert all(users.values())
    owner = Membership.objects.get(user=users["owner"], workspace_id=demo["workspace_id"])
    member = Membership.objects.get(user=users["member"], workspace_id=demo["workspace_id"])
    assert owner.allows(Action.PROGRAM_REGENERATE_KEY)
    assert member.allows(Action.TRACKING_LIST) and not member.allows(Action.PROGRAM_REGENERATE_KEY)
    assert not Membership.objects.filter(user=users["outsider"]).exists()


def test_it_can_run_many_times_against_one_database():
    first, second = run_demo(), run_demo()
    assert first["links"]["main"] != second["links"]["main"]
    assert first["users"]["owner"]["username"] != second["users"]["owner"]["username"]


def test_without_json_it_prints_a_summary_with_curl_commands():
    out = StringIO()
    call_command("demo", stdout=out)
    text = out.getvalue()
    assert "curl -s -X POST" in text and "/api/v1/track/click" in text and "Bearer aff_" in text


def run_demo_text(*args: str) -> str:
    out = StringIO()
    call_command("demo", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def server_url_file(tmp_path, monkeypatch):
    from programs.management.commands import demo

    path = tmp_path / ".server-url"
    monkeypatch.setattr(demo, "SERVER_URL_FILE", path)
    monkeypatch.delenv("PORT", raising=False)
    return path


def test_the_curl_lines_use_the_address_the_local_server_serves_on(settings, server_url_file):
    settings.PUBLIC_BASE_URL = ""
    server_url_file.write_text("http://127.0.0.1:9137\n")
    text = run_demo_text()
    assert "curl -s -X POST http://127.0.0.1:9137/api/v1/track/click" in text
    assert "http://127.0.0.1:8000" not in text


def test_the_curl_lines_fall_back_to_port_then_8000(settings, server_url_file, monkeypatch):
    settings.PUBLIC_BASE_URL = ""
    assert "http://127.0.0.1:8000/api/v1/track/sale" in run_demo_text()
    monkeypatch.setenv("PORT", "9200")
    assert "http://127.0.0.1:9200/api/v1/track/sale" in run_demo_text()


def test_the_public_address_and_an_explicit_base_url_win(settings, server_url_file):
    server_url_file.write_text("http://127.0.0.1:9137")
    settings.PUBLIC_BASE_URL = "https://track.example.test"
    assert "https://track.example.test/api/v1/track/refund" in run_demo_text()
    assert "http://track.internal:81/api/v1/track/refund" in run_demo_text("--base-url", "http://track.internal:81/")


def test_the_summary_says_where_to_sign_in_and_which_user_to_try_first(settings, server_url_file, monkeypatch):
    settings.PUBLIC_BASE_URL = ""
    monkeypatch.setenv("PORT", "9300")
    text = run_demo_text()
    owner = next(line for line in text.splitlines() if line.strip().startswith("owner "))
    username = owner.split()[1]
    assert "Dashboard: http://127.0.0.1:9300/ (sign in at http://127.0.0.1:9300/accounts/login/)" in text
    assert f"Try the owner first ({username})" in text
    main_id = Program.objects.filter(name__startswith="Main ").order_by("-pk").values_list("pk", flat=True)[0]
    assert f"Main program: http://127.0.0.1:9300/programs/{main_id}/" in text

    settings.PUBLIC_BASE_URL = "https://track.example.test"
    assert "sign in at https://track.example.test/accounts/login/" in run_demo_text()


def test_the_sign_in_it_prints_opens_the_dashboard_for_the_owner(client, settings, server_url_file):
    settings.PUBLIC_BASE_URL = ""
    demo = run_demo()
    owner = demo["users"]["owner"]
    signed_in = client.post("/accounts/login/", {"username": owner["username"], "password": owner["password"]})
    assert signed_in.status_code == 302 and signed_in.headers["Location"] == "/"
    overview = client.get(f"/programs/{demo['programs']['main']['id']}/")
    assert overview.status_code == 200
