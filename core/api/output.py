"""Output serializers built from a mapping of their fields: for bodies with a key a class body cannot declare, such
as "data" (Serializer.data is the rendered body) or "from" (a Python keyword), or fields shared as a mapping."""

import sys
from typing import Any

from rest_framework import serializers

from core.api.fields import AnyField


def output_serializer(name: str, fields: dict[str, AnyField]) -> type[serializers.Serializer[Any]]:
    """A Serializer class with these fields. Name it after its OpenAPI component plus "Serializer" (drf-spectacular
    drops the suffix). DRF orders declared fields by when each was made, which is the mapping's order when its
    fields are made in it. Give each name its own field instance: under two names, one instance renders and
    documents the last name only."""
    # The class belongs to the module that calls this, as collections.namedtuple does it.
    module = sys._getframe(1).f_globals["__name__"]
    return type(name, (serializers.Serializer,), {"__module__": module, **fields})
