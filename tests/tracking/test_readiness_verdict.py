"""The readiness verdict on its own: ready unless a check fails, and the next step of the first check that
needs one (failures before warnings)."""

from django.utils import timezone

from insight.readiness import FAIL, PASS, WARN, Check, key_check, readiness_verdict


def check(status: str, next_step: str = "") -> Check:
    return Check(id=f"check_{next_step or status}", status=status, title="A check", detail="", next_step=next_step)


def test_all_checks_passing_is_ready_with_nothing_to_do():
    verdict = readiness_verdict([check(PASS), check(PASS)])
    assert (verdict.ready, verdict.status, verdict.next_step) == (True, "ready", "")


def test_warnings_alone_are_ready_with_the_first_warning_as_next_step():
    verdict = readiness_verdict([check(PASS), check(WARN, "first warning"), check(WARN, "second warning")])
    assert (verdict.ready, verdict.status, verdict.next_step) == (True, "ready_with_warnings", "first warning")


def test_a_failing_check_comes_before_an_earlier_warning():
    verdict = readiness_verdict([check(WARN, "a warning"), check(FAIL, "the failure"), check(FAIL, "later failure")])
    assert (verdict.ready, verdict.status, verdict.next_step) == (False, "incomplete", "the failure")


def test_a_program_without_a_live_key_fails_the_key_check():
    result = key_check(None, now=timezone.now())
    assert (result.id, result.status, result.next_step) == (
        "key_health",
        FAIL,
        "Regenerate the key in the dashboard.",
    )
