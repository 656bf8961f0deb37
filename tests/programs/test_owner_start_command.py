"""`manage.py owner_start`: an operator becomes the owner of their own program in one step, and a re-run makes
nothing twice."""

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

from programs.models import Membership, Partner, PartnerProgram, Program, ProgramKey, ReferralLink, Role, Workspace
from programs.selectors import program_key_get_by_raw
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-unusual-pass-7"
START = ("--email", "ada@example.com", "--program", "Ada's shop", "--domain", "shop.ada.example")


@pytest.fixture(autouse=True)
def _owner_password(monkeypatch, settings):
    monkeypatch.setenv("OWNER_PASSWORD", PASSWORD)
    settings.PUBLIC_BASE_URL = "https://track.example.test"


def run(*args: str) -> str:
    out = StringIO()
    call_command("owner_start", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def run_json(*args: str) -> dict[str, Any]:
    return json.loads(run(*args, "--json"))


def _line_value(text: str, label: str) -> str:
    return next(line.split()[2] for line in text.splitlines() if line.strip().startswith(label))


def test_it_makes_the_user_the_owner_of_a_workspace_and_a_program_with_keys_shown_once():
    text = run(*START, "--password-from-env", "OWNER_PASSWORD", "--no-input")

    user = authenticate(username="ada@example.com", password=PASSWORD)
    assert user is not None and user.email == "ada@example.com" and not user.is_staff
    membership = Membership.objects.get(user=user)
    assert (membership.role, membership.is_active) == (Role.OWNER, True)
    program = Program.objects.get(workspace=membership.workspace)
    assert (program.name, program.domain, program.commission_type, program.commission_rate) == (
        "Ada's shop",
        "shop.ada.example",
        "percent",
        20,
    )
    assert membership.workspace.name == "Ada's shop"

    live, test = _line_value(text, "live key"), _line_value(text, "test key")
    assert live.startswith("aff_") and test.startswith("aff_test_")
    assert program_key_get_by_raw(live).program_id == program.pk
    assert program_key_get_by_raw(test).mode == ProgramKey.Mode.TEST
    # Only digests are stored.
    stored = list(ProgramKey.objects.filter(program=program).values_list("digest", "last4"))
    assert all(live not in row and test not in row for row in stored)

    assert f"User #{user.pk} ada@example.com: created" in text
    assert f'Workspace #{membership.workspace_id} "Ada\'s shop": created, owned by ada@example.com' in text
    assert "Sign in: https://track.example.test/accounts/login/ as ada@example.com" in text
    assert f"Your program: https://track.example.test/programs/{program.pk}/" in text
    assert "Run this again with --partner NAME" in text


def test_a_rerun_says_what_exists_and_makes_nothing_twice_nor_shows_the_keys_again():
    first = run_json(*START, "--password-from-env", "OWNER_PASSWORD")
    again_text = run(*START, "--no-input")
    again = run_json(*START, "--no-input")

    assert Workspace.objects.count() == 1 and Program.objects.count() == 1 and Membership.objects.count() == 1
    assert get_user_model().objects.count() == 1
    assert first["program"]["api_key"].startswith("aff_")
    assert "api_key" not in again["program"] and "test_api_key" not in again["program"]
    assert (again["user"]["created"], again["workspace"]["created"], again["program"]["created"]) == (
        False,
        False,
        False,
    )
    assert again["workspace"]["id"] == first["workspace"]["id"]
    assert "aff_" not in again_text
    program_id = first["program"]["id"]
    assert f'Program #{program_id} "Ada\'s shop" (shop.ada.example): exists' in again_text
    assert f"regenerate one on https://track.example.test/programs/{program_id}/key" in again_text
    assert "(password unchanged)" in again_text

    # Another program name: a second program in the same workspace, with its own keys.
    other = run_json("--email", "ada@example.com", "--program", "Ada's other shop", "--domain", "b.example")
    assert other["workspace"]["id"] == first["workspace"]["id"] and other["program"]["created"] is True
    assert Workspace.objects.count() == 1 and Program.objects.count() == 2


def test_an_existing_superuser_is_given_their_workspace_without_a_password(monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", PASSWORD)
    call_command("createsuperuser", "--no-input", "--username", "root", "--email", "ops@example.com", stdout=StringIO())
    root = get_user_model().objects.get(username="root")
    assert not Membership.objects.filter(user=root).exists()

    started = run_json("--email", "ops@example.com", "--program", "Shop", "--domain", "shop.example.com", "--no-input")

    assert started["user"] == {"id": root.pk, "username": "root", "created": False}
    assert Membership.objects.get(user=root).role == Role.OWNER
    assert started["dashboard"]["sign_in"] == "https://track.example.test/accounts/login/"
    assert authenticate(username="root", password=PASSWORD) == root  # the password is left alone


def test_a_user_who_owns_a_workspace_keeps_it_and_another_workspace_name_is_refused():
    membership = MembershipFactory.create(user__email="owner@example.com", workspace__name="Acme")
    started = run_json("--email", "owner@example.com", "--program", "Acme shop", "--domain", "acme.example")
    assert started["workspace"] == {"id": membership.workspace_id, "name": "Acme", "created": False}

    with pytest.raises(CommandError, match=r'already owns workspace #\d+ "Acme", and this command never makes a'):
        run("--email", "owner@example.com", "--program", "P", "--domain", "p.example", "--workspace", "Other")
    assert Workspace.objects.count() == 1 and not Program.objects.filter(name="P").exists()


def test_a_member_who_owns_nothing_gets_a_workspace_of_their_own():
    membership = MembershipFactory.create(user__email="member@example.com", role=Role.MEMBER)
    started = run_json("--email", "member@example.com", "--program", "Mine", "--domain", "mine.example")
    assert started["workspace"]["created"] is True and started["workspace"]["id"] != membership.workspace_id
    assert Membership.objects.get(user=membership.user, workspace_id=started["workspace"]["id"]).role == Role.OWNER


def test_a_partner_is_enrolled_with_a_referral_link_once():
    text = run(*START, "--password-from-env", "OWNER_PASSWORD", "--partner", "Bea Blogger")
    program = Program.objects.get()
    partner = Partner.objects.get(name="Bea Blogger", workspace=program.workspace)
    link = ReferralLink.objects.get(partner=partner, program=program, is_active=True)
    assert PartnerProgram.objects.filter(partner=partner, program=program).exists()
    assert f"https://shop.ada.example/?aff={link.short_link} is a click for the partner" in text
    assert f"-H 'Authorization: Bearer {_line_value(text, 'live key')}'" in text

    again = run_json(*START, "--partner", "bea blogger")
    assert again["partner"] == {"id": partner.pk, "name": "Bea Blogger", "created": False}
    assert again["link"] == {"id": link.pk, "short_link": link.short_link, "created": False}
    assert Partner.objects.count() == 1 and ReferralLink.objects.count() == 1


def test_a_new_user_is_asked_for_the_password_twice(monkeypatch):
    answers = iter([PASSWORD, PASSWORD])
    monkeypatch.setattr("getpass.getpass", lambda prompt="Password: ": next(answers))
    started = run_json(*START, "--username", "ada", "--superuser")
    user = authenticate(username="ada", password=PASSWORD)
    assert user is not None and user.is_superuser and user.is_staff
    assert started["user"] == {"id": user.pk, "username": "ada", "created": True}


@pytest.mark.parametrize(
    ("args", "prompted", "message"),
    [
        ((), [PASSWORD, "something-else-9"], "The two passwords differ; nothing was made"),
        ((), ["short", "short"], "This password is too short"),
        (("--no-input",), [], "a new user needs a password: pass --password-from-env VAR"),
        (("--password-from-env", "UNSET_VARIABLE"), [], "The environment variable UNSET_VARIABLE is not set"),
        (("--commission-rate", "150"), [], "commission_rate is a percentage for this type and cannot exceed 100"),
        (("--commission-type", "fixed", "--commission-rate", "abc"), [], "commission_rate must be a positive number"),
    ],
)
def test_a_refused_start_makes_nothing(monkeypatch, args, prompted, message):
    answers = iter(prompted)
    monkeypatch.setattr("getpass.getpass", lambda prompt="Password: ": next(answers))
    with pytest.raises(CommandError, match=message):
        run(*START, *args)
    assert not get_user_model().objects.exists() and not Workspace.objects.exists() and not Program.objects.exists()


def test_several_users_with_the_email_need_a_username():
    UserFactory.create(username="one", email="twin@example.com")
    UserFactory.create(username="two", email="TWIN@example.com")
    with pytest.raises(CommandError, match="Several users have the email twin@example.com: name the one with"):
        run("--email", "twin@example.com", "--program", "P", "--domain", "p.example")
    started = run_json("--email", "twin@example.com", "--username", "two", "--program", "P", "--domain", "p.example")
    assert started["user"]["username"] == "two"
