from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from programs.models import ProgramKey
from tests.factories import ProgramFactory

pytestmark = pytest.mark.django_db


def test_it_marks_the_live_key_with_the_deadline():
    program = ProgramFactory()
    deadline = (timezone.now() + timedelta(days=14)).replace(microsecond=0)
    call_command("rotate_key", str(program.pk), "--deadline", deadline.isoformat(), stdout=StringIO())
    key = ProgramKey.objects.get(program=program, mode="live")
    assert key.rotation_deadline == deadline and key.rotation_marked_at is not None
    assert not key.is_retired()
    assert ProgramKey.objects.get(program=program, mode="test").rotation_deadline is None


def test_a_past_deadline_retires_it_now():
    program = ProgramFactory()
    call_command("rotate_key", str(program.pk), "--deadline", "2020-01-01T00:00:00Z", stdout=StringIO())
    assert ProgramKey.objects.get(program=program, mode="live").is_retired()


@pytest.mark.parametrize("deadline", ["tomorrow", "2026-12-01T00:00:00"])
def test_it_refuses_a_bad_deadline(deadline):
    program = ProgramFactory()
    with pytest.raises(CommandError):
        call_command("rotate_key", str(program.pk), "--deadline", deadline, stdout=StringIO())


def test_it_refuses_an_unknown_program():
    with pytest.raises(CommandError, match="no live key"):
        call_command("rotate_key", "999999", "--deadline", "2030-01-01T00:00:00Z", stdout=StringIO())
