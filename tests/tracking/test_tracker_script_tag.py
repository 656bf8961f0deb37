"""The tracker tag (tracking.services.tracker.tracker_script_tag): readiness and the dashboard show one tag."""

import pytest

from dashboard.views import integration_snippets
from insight.readiness import readiness_compute
from tests.factories import ProgramFactory
from tracking.services.tracker import tracker_script_tag


def test_the_tag_loads_the_served_tracker_with_the_program_id():
    assert tracker_script_tag(base_url="https://svc.example", program_id=42) == (
        '<script src="https://svc.example/js/svc-tracker.js" data-svc-program-id="42" defer></script>'
    )


@pytest.mark.django_db
def test_readiness_and_the_dashboard_snippet_give_the_same_tag():
    program = ProgramFactory()
    tag = tracker_script_tag(base_url="https://svc.example", program_id=program.pk)
    assert integration_snippets(base_url="https://svc.example", program=program)["tracker"] == tag
    clicks = next(
        c
        for c in readiness_compute(program=program, base_url="https://svc.example/")["checks"]
        if c["id"] == "clicks_received"
    )
    assert tag in clicks["next_step"]
