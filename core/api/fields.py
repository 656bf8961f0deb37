"""Strict DRF fields, the output field of times, and a lean serializer base. DRF's defaults coerce ("100" -> 100,
5 -> "5", "yes" -> True); the tracking API's contract is typed JSON, so a wrong type is refused with the field's
spec message."""

import copy
import threading
from collections.abc import Hashable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from core.ids import integer_parse

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


# A field of any kind, as a serializer's fields mapping holds several: DRF's Field is generic in its value, data,
# representation and instance types.
AnyField: TypeAlias = serializers.Field[Any, Any, Any, Any]


def spec_messages(message: str) -> "dict[str, StrOrPromise]":
    """One message for every way a field can be wrong: what the spec gives callers."""
    return {
        key: message for key in ("required", "null", "invalid", "blank", "max_length", "min_value", "invalid_choice")
    }


class _SurrogateCharactersProhibited(ProhibitSurrogateCharactersValidator):
    """DRF's check at C speed: a text without surrogate code points is exactly one that encodes to UTF-8. DRF's walks
    every character in Python, about a tenth of a millisecond over a click's body; its message is kept."""

    def __call__(self, value: Any) -> None:
        try:
            str(value).encode("utf-8")
        except UnicodeEncodeError:
            super().__call__(value)


class StrictCharField(serializers.CharField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = [
            _SurrogateCharactersProhibited() if type(validator) is ProhibitSurrogateCharactersValidator else validator
            for validator in self.validators
        ]

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class AsciiIntegerField(serializers.IntegerField):
    """A JSON integer, or a string of ASCII digits (core.ids.integer_parse): DRF's IntegerField runs int() on a
    string, which reads other scripts' digits ("١" is 1)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str):
            if len(data) > self.MAX_STRING_LENGTH:
                self.fail("max_string_length")
            number = integer_parse(data)
            if number is None:
                self.fail("invalid")
            data = number
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


@extend_schema_field({"oneOf": [{"type": "integer"}, {"type": "string", "pattern": "^[0-9]+$"}]})
class IdField(serializers.Field[str | int, object, str | int, Any]):
    """A string or an integer (numeric strings are accepted), kept as given for the service."""

    default_error_messages = {"invalid": "must be a string or an integer"}

    def to_internal_value(self, data: Any) -> str | int:
        if isinstance(data, bool) or not isinstance(data, str | int):
            self.fail("invalid")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class JsonObjectField(serializers.DictField):
    def to_internal_value(self, data: Any) -> dict[Any, Any]:
        if not isinstance(data, dict):
            self.fail("not_a_dict", input_type=type(data).__name__)
        return data


class LeanSerializer(serializers.Serializer[Any]):
    """DRF deep-copies every declared field for every serializer instance (about a millisecond for a dozen
    fields). Our input fields keep no per-request state beyond what bind() sets on the copy, so a shallow
    copy per instance is enough; nested serializers are not used with it."""

    def get_fields(self) -> dict[str, AnyField]:
        return {name: copy.copy(field) for name, field in self._declared_fields.items()}


_bound_fields = threading.local()


class SharedFieldsSerializer(LeanSerializer):
    """An input serializer of the hot tracking routes: its fields are copied and bound once per thread and then
    shared by every instance of the class (copying and binding a dozen fields took half of a click body's
    validation). Safe for flat input serializers only: no field reads its parent's state or context, no nested
    serializers, never partial (a shared field's root is the instance that first bound it)."""

    def shared_fields_variant(self) -> Hashable:
        """Which shared set of fields this instance takes: one per class, unless a class keeps variants."""
        return None

    def shared_fields_adjust(self, fields: Any) -> None:
        """Changes a variant's fields once, when its shared set is first bound."""

    @property
    def fields(self) -> Any:
        shared = _bound_fields.__dict__.setdefault("by_class", {})
        variant = (type(self), self.shared_fields_variant())
        fields = shared.get(variant)
        if fields is None:
            fields = super().fields
            self.shared_fields_adjust(fields)
            shared[variant] = fields
        return fields


class IsoDateTimeField(serializers.DateTimeField):
    """Output only: a datetime as datetime.isoformat() writes it ("2026-01-02T03:04:05.678901+00:00"), which is
    how the JSON bodies have always rendered times; DRF's DateTimeField would write UTC as "...Z". Described as a
    string of format date-time."""

    def to_representation(self, value: datetime) -> str:
        return value.isoformat()
