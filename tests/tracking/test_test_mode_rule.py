"""The test-mode rule, one function per strength (tracking.services.common)."""

import pytest

from programs.models import ProgramKey
from tracking.services.common import body_test_mode, is_test_mode, sale_is_test

LIVE_KEY = ProgramKey(mode=ProgramKey.Mode.LIVE)
TEST_KEY = ProgramKey(mode=ProgramKey.Mode.TEST)


@pytest.mark.parametrize(
    ("additional_data", "expected"),
    [
        ({"test_mode": True}, True),
        ({"test_mode": "true"}, False),
        ({"test_mode": 1}, False),
        ({}, False),
        (None, False),
        (["test_mode"], False),
        ("test_mode", False),
    ],
)
def test_only_a_true_flag_in_an_object_is_test_mode(additional_data, expected):
    assert body_test_mode(additional_data) is expected


def test_the_test_key_makes_a_lead_or_refund_a_test_without_the_flag():
    assert is_test_mode(None, TEST_KEY) is True
    assert is_test_mode({"test_mode": False}, TEST_KEY) is True
    assert is_test_mode({}, LIVE_KEY) is False
    assert is_test_mode({}, None) is False
    assert is_test_mode({"test_mode": True}, LIVE_KEY) is True


def test_a_sale_is_also_a_test_when_the_processor_says_livemode_false():
    assert sale_is_test(data={"livemode": False}, key=LIVE_KEY) is True
    assert sale_is_test(data={"livemode": None}, key=LIVE_KEY) is False
    assert sale_is_test(data={"livemode": True}, key=TEST_KEY) is True
    assert sale_is_test(data={"additional_data": "junk"}, key=LIVE_KEY) is False
