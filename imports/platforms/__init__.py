"""The platforms an owner can move in from, by name (`manage.py import <name>`, the dashboard's upload page). Each
reads that platform's documented export files into an imports.records.Source; docs/import.md (Platforms) says where
to get them and what comes over."""

from imports.platforms import dub, firstpromoter, partnerstack, rewardful, tolt
from imports.platforms.base import Platform

PLATFORMS: dict[str, Platform] = {
    platform.name: platform
    for platform in (
        Platform(
            name="rewardful",
            label="Rewardful",
            link_param="via",
            # Rewardful's Stripe integration writes the referral id on the customer as metadata "referral".
            stripe_metadata_keys=("referral",),
            export_help=(
                "Rewardful API: GET /v1/affiliates?expand[]=links&expand[]=commission_stats&expand[]=campaign, "
                "/v1/referrals?expand[]=affiliate and /v1/commissions?expand[]=sale (and /v1/campaigns, "
                "/v1/affiliate_coupons for groups and coupon codes) saved as JSON, every page, or "
                "the affiliate CSV of Rewardful's import template (first_name, last_name, email, token)"
            ),
            reader=rewardful.read,
        ),
        Platform(
            name="firstpromoter",
            label="FirstPromoter",
            link_param="fpr",
            # FirstPromoter's Stripe setup passes its visitor tracking id as metadata "fp_tid".
            stripe_metadata_keys=("fp_tid",),
            export_help=(
                "FirstPromoter API v2: GET /api/v2/company/promoters, /referrals, /commissions (and /payout_methods "
                "for payout emails) saved as JSON, with the account's currency (its commissions carry none); or v1 "
                "GET /v1/promoters/list, /v1/leads/list and /v1/rewards/list"
            ),
            reader=firstpromoter.read,
            asks_currency=True,
        ),
        Platform(
            name="tolt",
            label="Tolt",
            link_param="ref",
            # Tolt's Stripe app reads metadata "tolt_referral" on the checkout session and customer.
            stripe_metadata_keys=("tolt_referral",),
            export_help=(
                "Tolt API v2: GET /v2/programs, /partners, /links, /customers, /transactions, /commissions (and "
                "/groups, /promotion-codes) saved as JSON (and v1's GET /v1/partners?expand[]=program for payout "
                "emails), or the same lists from v1"
            ),
            reader=tolt.read,
        ),
        Platform(
            name="partnerstack",
            label="PartnerStack",
            link_param="gspk",
            # Its S2S guide's current links; ?gspk= is the older form, still in the wild.
            extra_link_params=("ps_partner_key",),
            # PartnerStack's Stripe webhook reads metadata "partner_key" (and "customer_key") on the customer.
            stripe_metadata_keys=("partner_key", "customer_key"),
            export_help=(
                "PartnerStack API v2: GET /api/v2/partnerships, /customers, /rewards (and /transactions, /groups) "
                "saved as JSON"
            ),
            reader=partnerstack.read,
        ),
        Platform(
            name="dub",
            label="Dub",
            link_param="",
            # Dub's Stripe integration names its customer by metadata "dubCustomerId" (newer: dubCustomerExternalId).
            stripe_metadata_keys=("dubCustomerId", "dubCustomerExternalId"),
            export_help=(
                "Dub API: GET /partners, /links, /customers?includeExpandedFields=true, /commissions (and /groups, "
                "/discount-codes) saved as JSON"
            ),
            reader=dub.read,
        ),
    )
}

__all__ = ["PLATFORMS", "Platform"]
