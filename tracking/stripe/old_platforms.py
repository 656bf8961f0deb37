"""The Stripe attribution's old-platform step (after the spec's five): a customer named by the Stripe metadata key of
the platform a program moved from. tracking knows no such platform: the imports app's finder, above tracking, is
named here by path (core.providers), so the attribution reads what an import brought over without depending on it."""

from collections.abc import Callable, Mapping
from typing import Any

from core.providers import Providers
from programs.models import Program

from ..models import Customer

OLD_PLATFORM_STEP = "old_platform"

# Each finder answers the customer the metadata names for the program, or None; the first answer wins.
OldPlatformFinder = Callable[..., Customer | None]
old_platform_finders: Providers[OldPlatformFinder] = Providers("imports.stripe_attribution.old_platform_customer")


def old_platform_customer(*, program: Program, metadata: Mapping[str, Any], email: str = "") -> Customer | None:
    for finder in old_platform_finders:
        customer = finder(program=program, metadata=metadata, email=email)
        if customer is not None:
            return customer
    return None
