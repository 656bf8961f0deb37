"""Database expressions the apps share."""

from django.db.models import BigIntegerField, Func


class Negated(Func):
    """-expression, with no parameter, so an index on it and a query ordering by it are the same expression: a
    list ordered by Negated(F("id")) ascending is newest first in an order that only such an index gives (the
    primary key cannot stand in for it, however the planner misjudges the rows it would skip)."""

    template = "(-%(expressions)s)"
    output_field = BigIntegerField()
