"""The world is built once per module and every case sees it as built: what one case writes (its `before`, its
request) is rolled back before the next. Two cases in a row, the first deleting and changing, the second reading."""

import pytest

from programs.models import ReferralLink
from webhooks.models import WebhookEndpoint

from .world import World


@pytest.mark.parametrize("step", ["write", "read"])
def test_a_case_never_sees_what_an_earlier_case_wrote(step: str, world: World) -> None:
    if step == "write":
        WebhookEndpoint.objects.filter(pk=world.ids["endpoint"]).delete()
        ReferralLink.objects.filter(pk=world.ids["link"]).update(is_active=False)
        world.ids["link"] = 0
        world.clients["owner"].logout()
        return
    assert world.ids["link"] != 0
    assert WebhookEndpoint.objects.filter(pk=world.ids["endpoint"]).exists()
    assert ReferralLink.objects.get(pk=world.ids["link"]).is_active
    assert world.clients["owner"].get(f"/api/tracking/status/{world.ids['program']}").status_code == 200
