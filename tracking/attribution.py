"""The attribution window: the one rule saying whether a sale is credited to the customer's click. The sale
that converts the customer must come within the program's cookie window (cookie_window_days) of the click that
counted for it; later sales and renewals follow the customer. The sale services decide with it and
insight.explain explains with it."""

from dataclasses import dataclass
from datetime import datetime

from programs.models import Program

SECONDS_PER_DAY = 86400


@dataclass(frozen=True)
class AttributionWindow:
    """A click's age at a sale against the program's window, and whether the window applies to that sale."""

    window_days: int
    age_days: float  # exact: the verdict is taken on it; explanations show it rounded (shown_age_days)
    applies: bool  # the sale converts the customer

    @property
    def within(self) -> bool:
        return self.age_days <= self.window_days

    @property
    def refused(self) -> bool:
        """The sale is not recorded: it converts the customer and comes after the window."""
        return self.applies and not self.within

    @property
    def shown_age_days(self) -> float:
        """The age as the tracking log and the explanations show it."""
        return round(self.age_days, 2)


def attribution_window(
    *, program: Program, clicked_at: datetime, sale_at: datetime, first_sale_at: datetime | None
) -> AttributionWindow:
    """The window verdict for a sale at sale_at of a customer whose counting click was at clicked_at and whose
    first live sale, if any, was at first_sale_at. The window applies to the converting sale: the customer has
    no first sale yet, or (asked after the fact) its first sale is this one."""
    return AttributionWindow(
        window_days=program.cookie_window_days,
        age_days=(sale_at - clicked_at).total_seconds() / SECONDS_PER_DAY,
        applies=first_sale_at is None or first_sale_at >= sale_at,
    )
