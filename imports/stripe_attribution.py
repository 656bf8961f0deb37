"""The old platform's step of the Stripe attribution, after the spec's five: a payment (or a Stripe customer) whose
metadata carries a key that a platform the program imported from writes on Stripe (Rewardful's `referral`, Tolt's
`tolt_referral`, PartnerStack's `partner_key`...) is attributed through what that import brought over
(imports.models.ImportedRecord): the imported referral's customer, or, for a partner's code, a new customer of that
partner's link. The sale's attributed_by is "stripe:old_platform"; docs/link_aliases.md names the keys."""

from collections.abc import Mapping
from functools import cache
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from programs.models import Program, ReferralLink
from tracking.models import Customer
from tracking.services.common import new_click_id

from .models import ImportedRecord
from .platforms import PLATFORMS

# Keys the platforms' own documentation names besides imports.platforms' (FirstPromoter matches a Stripe customer
# by metadata fp_uid; PartnerStack reads customer_key or customer_id; Dub's webhooks also read dub_customer_id).
MORE_METADATA_KEYS: dict[str, tuple[str, ...]] = {
    "firstpromoter": ("fp_uid",),
    "partnerstack": ("customer_id",),
    "dub": ("dub_customer_id",),
}
# Stripe metadata values are at most 500 characters; the columns they are compared with hold 255.
MAX_VALUE_LENGTH = 255


def metadata_keys(platform: str) -> tuple[str, ...]:
    """The Stripe metadata keys the platform writes, in the order they are read."""
    known = PLATFORMS.get(platform)
    keys = (known.stripe_metadata_keys if known else ()) + MORE_METADATA_KEYS.get(platform, ())
    return tuple(dict.fromkeys(keys))


@cache
def _all_keys() -> frozenset[str]:
    return frozenset(key for platform in (*PLATFORMS, *MORE_METADATA_KEYS) for key in metadata_keys(platform))


def _value(metadata: Mapping[str, Any], key: str) -> str:
    value = metadata.get(key)
    if not isinstance(value, str | int) or isinstance(value, bool):
        return ""
    text = str(value).strip()
    return text if 0 < len(text) <= MAX_VALUE_LENGTH else ""


def old_platform_customer(*, program: Program, metadata: Mapping[str, Any], email: str = "") -> Customer | None:
    """The customer an old platform's key in `metadata` names, for a program that imported from that platform
    (None otherwise). Costs no query when the metadata carries no platform's key."""
    if not isinstance(metadata, Mapping) or not any(_value(metadata, key) for key in _all_keys()):
        return None
    platforms = ImportedRecord.objects.filter(program=program).values_list("platform", flat=True).distinct()
    for platform in sorted(platforms):
        for key in metadata_keys(platform):
            value = _value(metadata, key)
            customer = _resolved(program, platform, value, email=email) if value else None
            if customer is not None:
                return customer
    return None


def _imported(program: Program, platform: str, kind: str) -> QuerySet[ImportedRecord]:
    return ImportedRecord.objects.filter(program=program, platform=platform, kind=kind)


def _resolved(program: Program, platform: str, value: str, *, email: str) -> Customer | None:
    """The value as an imported referral (its source id, or the customer key it came with), else as an imported
    partner code or link (a new customer of that link)."""
    customers = Customer.objects.filter(program=program, is_test=False)
    referrals = _imported(program, platform, ImportedRecord.Kind.REFERRAL)
    record = referrals.filter(source_id=value).values_list("object_id", flat=True).first()
    customer = customers.filter(pk=record).first() if record is not None else None
    if customer is None:
        customer = customers.filter(customer_key=value, pk__in=referrals.values("object_id")).order_by("pk").first()
    if customer is not None:
        return customer
    link = _imported_link(program, platform, value)
    if link is None:
        return None
    now = timezone.now()
    # As a click on the link would make it: the sale then follows the click's path (window, commission).
    return Customer.objects.create(
        program=program,
        click_id=new_click_id(program.pk),
        first_partner_id=link.partner_id,
        first_link=link,
        email=email[:254],
        first_clicked_at=now,
        last_clicked_at=now,
        created_at=now,
    )


def _imported_link(program: Program, platform: str, value: str) -> ReferralLink | None:
    """An imported link that is on, by its source id (PartnerStack's are "gspk:<partner key>") or its code."""
    links = _imported(program, platform, ImportedRecord.Kind.LINK)
    known = PLATFORMS.get(platform)
    source_ids = [value] + ([f"{known.link_param}:{value}"] if known and known.link_param else [])
    usable = ReferralLink.objects.filter(program=program, is_active=True, partner__isnull=False)
    record = links.filter(source_id__in=source_ids).values_list("object_id", flat=True).first()
    link = usable.filter(pk=record).first() if record is not None else None
    return link or usable.filter(short_link=value, pk__in=links.values("object_id")).first()
