"""`manage.py request_log_cost`, which make bench runs: a positive cost per call, and no rows left behind."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from programs.models import ApiCall

pytestmark = pytest.mark.django_db


def test_it_measures_the_cost_per_call_and_cleans_up(settings):
    settings.REQUEST_LOG_BATCH = 5
    out = StringIO()
    call_command("request_log_cost", "--calls", "12", "--json", stdout=out)
    measured = json.loads(out.getvalue())
    assert measured["calls"] == 12 and measured["microseconds_per_call"] > 0
    assert not ApiCall.objects.exists()
