from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_the_models_and_migrations_agree():
    # Fails when a model changes without its migration, or when a migration is not deterministic.
    call_command("makemigrations", "--check", "--dry-run", stdout=StringIO())
