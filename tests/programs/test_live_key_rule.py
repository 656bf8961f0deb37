"""One rule for "a program's live key" (ProgramKey.objects.live(), and ProgramKey.is_live for keys already read):
the selector, the model's masked token, the admin's rotation action and the settings route all read the same key."""

import pytest
from django.contrib.auth import get_user_model

from programs.models import Program, ProgramKey
from programs.selectors import live_keys, program_live_key_get
from tests.factories import ProgramFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client):
    client.force_login(get_user_model().objects.create_superuser("operator", "op@example.com", "pass-word-123"))
    return client


def test_the_queryset_and_the_predicate_name_the_same_keys():
    ProgramFactory(), ProgramFactory()
    every = list(ProgramKey.objects.all())
    assert {key.pk for key in every if key.is_live} == set(ProgramKey.objects.live().values_list("pk", flat=True))
    assert set(live_keys().values_list("pk", flat=True)) == set(ProgramKey.objects.live().values_list("pk", flat=True))
    assert {key.mode for key in ProgramKey.objects.live()} == {ProgramKey.Mode.LIVE}


def test_the_masked_token_is_the_selectors_live_key(django_assert_num_queries):
    program = ProgramFactory()
    live = program_live_key_get(program_id=program.pk)
    assert live is not None and program.api_token_masked == live.masked

    prefetched = Program.objects.prefetch_related("keys").get(pk=program.pk)
    with django_assert_num_queries(0):
        assert prefetched.api_token_masked == live.masked


def test_a_program_without_a_live_key_shows_no_token_anywhere():
    program = ProgramFactory()
    ProgramKey.objects.live().filter(program=program).delete()
    assert program_live_key_get(program_id=program.pk) is None
    assert Program.objects.get(pk=program.pk).api_token_masked == ""


def test_the_rotation_action_marks_the_live_key_only(operator_client):
    program = ProgramFactory()
    operator_client.post(
        "/admin/programs/program/",
        {
            "action": "mark_live_key_for_rotation",
            "_selected_action": [program.pk],
            "apply": "1",
            "deadline": "2031-01-01 00:00:00",
        },
    )
    marked = ProgramKey.objects.filter(program=program, rotation_deadline__isnull=False)
    assert list(marked) == [program_live_key_get(program_id=program.pk)]
