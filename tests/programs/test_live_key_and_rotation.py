"""The live-key lookup (programs.selectors.program_live_key_get) and a key's rotation state
(ProgramKey.rotation / KeyRotation.of), the one place every route and page reads them from."""

from datetime import timedelta

import pytest
from django.utils import timezone

from programs.models import KeyRotation, ProgramKey
from programs.selectors import program_live_key_get
from programs.services import program_key_mark_rotation
from tests.factories import ProgramFactory

pytestmark = pytest.mark.django_db


def test_the_live_key_is_the_programs_live_one_never_its_test_key_or_another_programs():
    program, other = ProgramFactory(), ProgramFactory()
    key = program_live_key_get(program_id=program.pk)
    assert key is not None
    assert (key.program_id, key.mode) == (program.pk, ProgramKey.Mode.LIVE)
    assert program_live_key_get(program_id=other.pk).program_id == other.pk


def test_a_program_without_a_live_key_has_none(django_assert_num_queries):
    program = ProgramFactory()
    ProgramKey.objects.filter(program=program, mode=ProgramKey.Mode.LIVE).delete()
    with django_assert_num_queries(1):
        assert program_live_key_get(program_id=program.pk) is None


def test_an_unmarked_key_is_neither_flagged_nor_retired():
    key = program_live_key_get(program_id=ProgramFactory().pk)
    assert key.rotation() == KeyRotation(flagged=False, retired=False, marked_at=None, deadline=None)


def test_a_marked_key_is_flagged_until_its_deadline_then_retired():
    key = program_live_key_get(program_id=ProgramFactory().pk)
    deadline = timezone.now() + timedelta(days=7)
    program_key_mark_rotation(key=key, deadline=deadline)

    before = key.rotation(deadline - timedelta(seconds=1))
    assert (before.flagged, before.retired, before.deadline) == (True, False, deadline)
    assert before.marked_at == key.rotation_marked_at
    at_deadline = key.rotation(deadline)
    assert (at_deadline.flagged, at_deadline.retired) == (True, True)


def test_no_key_means_no_rotation():
    assert KeyRotation.of(None, timezone.now()) == KeyRotation()
    assert KeyRotation().flagged is False and KeyRotation().retired is False
