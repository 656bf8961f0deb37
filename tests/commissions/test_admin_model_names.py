"""Admin's index names every model in a plural a reader would write ("Ledger entries", not "Ledger entrys")."""

import re

import pytest
from django.contrib import admin
from django.utils.text import capfirst

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

# Django makes a plural by appending "s"; after a consonant and "y" that is a misspelling.
MISSPELT_PLURAL = re.compile(r"[^aeiou]ys$")


def test_every_model_in_admin_has_a_plural_spelt_right():
    misspelt = {
        model.__name__: str(model._meta.verbose_name_plural)
        for model in admin.site._registry
        if MISSPELT_PLURAL.search(str(model._meta.verbose_name_plural))
    }
    assert misspelt == {}


def test_the_admin_index_lists_ledger_entries(client):
    client.force_login(UserFactory.create(is_staff=True, is_superuser=True))
    page = client.get("/admin/").content.decode()
    assert "Ledger entries" in page
    assert "entrys" not in page
    for model in admin.site._registry:
        assert capfirst(str(model._meta.verbose_name_plural)) in page, model.__name__
