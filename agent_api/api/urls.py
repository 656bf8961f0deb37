"""Every agent route, /api/agent/v1/: one module per resource, each with its own urlpatterns."""

from . import commissions, events, fraud, links, me, partners, payouts, programs, webhooks

# Path ids are matched as text so a malformed one gets the JSON 404 (after the key check), not Django's page.
urlpatterns = [
    *me.urlpatterns,
    *programs.urlpatterns,
    *fraud.urlpatterns,
    *partners.urlpatterns,
    *links.urlpatterns,
    *events.urlpatterns,
    *commissions.urlpatterns,
    *payouts.urlpatterns,
    *webhooks.urlpatterns,
]
