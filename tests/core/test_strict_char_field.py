"""StrictCharField checks surrogates with the codec (C speed) and answers exactly as DRF's validator does."""

import pytest
from rest_framework.exceptions import ValidationError
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from core.api.fields import StrictCharField


def verdict(validator: ProhibitSurrogateCharactersValidator, text: str) -> object:
    try:
        validator(text)
    except ValidationError as error:
        return error.detail
    return "ok"


@pytest.mark.parametrize("text", ["", "plain", "é 😀 中", "a\ud800b", "\udfff", "x\ud83d\ude00", "\ud7ff\ue000"])
def test_its_surrogate_check_answers_as_drfs(text):
    [ours] = [v for v in StrictCharField().validators if isinstance(v, ProhibitSurrogateCharactersValidator)]
    assert type(ours) is not ProhibitSurrogateCharactersValidator
    assert verdict(ours, text) == verdict(ProhibitSurrogateCharactersValidator(), text)
