import pytest
from django.db import connection

from programs.keys import key_digest
from programs.models import ProgramKey
from programs.services import program_key_regenerate
from tests.factories import ProgramFactory

pytestmark = pytest.mark.django_db


def test_no_plaintext_key_is_stored_anywhere():
    program = ProgramFactory()
    raw_values = [program.raw_api_key, program.raw_test_api_key]
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM programs_programkey")
        dump = repr(cursor.fetchall())
    for raw in raw_values:
        assert raw not in dump
        assert raw[4:] not in dump  # not even without its prefix
        assert key_digest(raw) in dump


def test_keys_are_prefixed_and_masked():
    program = ProgramFactory()
    assert program.raw_api_key.startswith("aff_")
    assert program.raw_test_api_key.startswith("aff_test_")
    assert program.api_token_masked == "aff_" + "*" * 12 + program.raw_api_key[-4:]


def test_regenerate_replaces_the_key_in_place():
    program = ProgramFactory()
    old = program.raw_api_key
    new = program_key_regenerate(program=program)
    assert new != old
    assert ProgramKey.objects.filter(program=program, mode="live").count() == 1
    assert not ProgramKey.objects.filter(digest=key_digest(old)).exists()
