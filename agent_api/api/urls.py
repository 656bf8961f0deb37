"""Every agent route, /api/agent/v1/: one package per resource, each view module with its own urlpatterns."""

from .applications import views as applications
from .commissions import views as commissions
from .events import views as events
from .fraud import views as fraud
from .groups import views as groups
from .invitations import views as invitations
from .links import views as links
from .me import views as me
from .partners import views as partners
from .payouts import views as payouts
from .programs import views as programs
from .webhooks import views as webhooks

# Path ids are matched as text so a malformed one gets the JSON 404 (after the key check), not Django's page.
urlpatterns = [
    *me.urlpatterns,
    *programs.urlpatterns,
    *fraud.urlpatterns,
    *groups.urlpatterns,
    *partners.urlpatterns,
    *invitations.urlpatterns,
    *applications.urlpatterns,
    *links.urlpatterns,
    *events.urlpatterns,
    *commissions.urlpatterns,
    *payouts.urlpatterns,
    *webhooks.urlpatterns,
]
