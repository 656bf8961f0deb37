"""A setting saved inside a transaction: another thread of the same process (a threaded worker) may cache the
rules still committed before the save commits; the commit empties the cache again, so that stale copy is not kept
for FRAUD_RULES_CACHE_SECONDS."""

import threading

import pytest
from django.db import connection, transaction

from fraud import config
from fraud.config import program_rules, rule_update
from fraud.rules import Rule
from tests.factories import ProgramFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_the_commit_empties_what_another_thread_cached_meanwhile(settings):
    settings.FRAUD_RULES_CACHE_SECONDS = 60
    program = ProgramFactory()

    def read_elsewhere() -> None:
        program_rules(program.pk)  # another connection: sees the rules still committed
        connection.close()

    with transaction.atomic():
        rule_update(program_id=program.pk, rule=Rule.PAID_ADS, enabled=True)
        reader = threading.Thread(target=read_elsewhere)
        reader.start()
        reader.join()
        assert program.pk in config._cache  # the stale copy, cached while the save was not committed
    assert program.pk not in config._cache
    assert program_rules(program.pk).get(Rule.PAID_ADS).enabled
