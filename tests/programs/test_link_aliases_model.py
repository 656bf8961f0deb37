"""Program.link_aliases' rule (programs.link_aliases) wherever a program is saved through a form or full_clean:
names `[a-z][a-z0-9_]{0,31}` or `_[a-z][a-z0-9_]{0,30}`, at most 5, never aff or via, none twice; off (an empty
list) by default."""

import json

import pytest
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.forms.models import model_to_dict
from django.test import RequestFactory

from programs.link_aliases import alias_code, link_aliases_from_text, link_aliases_of, link_aliases_problem
from programs.models import Program
from tests.factories import ProgramFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ([], ""),
        (["fpr", "ref", "gspk", "a", "z_9"], ""),
        (["a" + "b" * 31], ""),
        (["_from", "_by", "_go"], ""),
        (["_a" + "b" * 30], ""),
        (["a" + "b" * 32], "is not a usable link alias"),
        ("fpr", "must be a list"),
        ({"fpr": 1}, "must be a list"),
        (["fpr"] * 1 + ["a", "b", "c", "d", "e"], "at most 5"),
        (["aff"], "always accepted"),
        (["via"], "always accepted"),
        (["fpr", "fpr"], "listed twice"),
        (["Fpr"], "is not a usable link alias"),
        (["__fpr"], "is not a usable link alias"),
        (["_"], "is not a usable link alias"),
        (["_" + "a" * 32], "is not a usable link alias"),
        (["fp-r"], "is not a usable link alias"),
        ([""], "is not a usable link alias"),
        ([None], "is not a usable link alias"),
        ([1], "is not a usable link alias"),
    ],
)
def test_the_rule(value, problem):
    found = link_aliases_problem(value)
    assert (problem in found and bool(found)) if problem else found == ""


def test_full_clean_refuses_an_unusable_list_and_defaults_to_off():
    program = ProgramFactory()
    assert program.link_aliases == []
    program.link_aliases = ["fpr", "via"]
    with pytest.raises(ValidationError) as refused:
        program.full_clean()
    assert "link_aliases" in refused.value.message_dict
    program.link_aliases = ["fpr"]
    program.full_clean()


def test_the_admin_form_refuses_them_and_saves_a_good_list():
    program = ProgramFactory()
    request = RequestFactory().get("/")
    request.user = UserFactory(is_staff=True, is_superuser=True)
    form_class = admin.site._registry[Program].get_form(request, program, change=True)
    data = {**model_to_dict(program), "link_aliases": json.dumps(["ref", "ref"])}
    data = {key: value for key, value in data.items() if value is not None}
    refused = form_class(data=data, instance=program)
    assert not refused.is_valid() and "listed twice" in str(refused.errors["link_aliases"])
    accepted = form_class(data={**data, "link_aliases": json.dumps(["ref", "fpr"])}, instance=program)
    assert accepted.is_valid(), accepted.errors
    accepted.save()
    program.refresh_from_db()
    assert program.link_aliases == ["ref", "fpr"]


def test_typed_names_and_stored_values():
    assert link_aliases_from_text(" FPR, ref\tgspk ,, ") == ["fpr", "ref", "gspk"]
    assert link_aliases_from_text("") == []
    # A value written behind the rule (raw SQL) is read as no aliases.
    assert link_aliases_of(["fpr"]) == ("fpr",)
    assert link_aliases_of(["via"]) == () and link_aliases_of("fpr") == ()


@pytest.mark.parametrize(
    ("name", "value", "code"),
    [
        ("gspk", "amFuZQ", "jane"),
        ("gspk", "amFuZQ==", "jane"),
        ("gspk", "cGtfeFktOQ", "pk_xY-9"),
        ("gspk", "jane", "jane"),  # not Base64 of a printable code: as it is
        ("gspk", "AAEC", "AAEC"),  # decodes to control characters
        ("gspk", "a b", "a b"),
        ("fpr", "amFuZQ", "amFuZQ"),
    ],
)
def test_alias_code(name, value, code):
    assert alias_code(name, value) == code
