"""program_key_get_by_raw reads the key and its program with one hand-written SELECT: the same values, of the same
types, as the ORM loads them."""

from typing import Any

import pytest
from django.db.models import Model

from programs.models import Program, ProgramKey
from programs.selectors import program_key_get_by_raw
from tests.factories import ProgramFactory

pytestmark = pytest.mark.django_db


def _values(instance: Model) -> dict[str, Any]:
    return {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}


def test_the_key_and_its_program_are_what_the_orm_loads(django_assert_num_queries):
    program = ProgramFactory()
    with django_assert_num_queries(1):
        key = program_key_get_by_raw(program.raw_api_key)
        assert key.program.name == program.name  # joined: no second query
    orm_key = ProgramKey.objects.get(pk=key.pk)
    orm_program = Program.objects.get(pk=program.pk)
    for loaded, expected in ((key, orm_key), (key.program, orm_program)):
        got, want = _values(loaded), _values(expected)
        assert got == want
        assert {name: type(value) for name, value in got.items()} == {name: type(v) for name, v in want.items()}
        assert not loaded._state.adding and loaded._state.db == "default"


def test_an_unknown_key_is_none():
    ProgramFactory()
    assert program_key_get_by_raw("aff_live_nobody") is None
