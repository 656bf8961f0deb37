"""The readiness page: copy-paste snippets with this server's address and the program's id (never a real key),
the checklist wired to the readiness API, and Run verification only for roles with tracking:test."""

import pytest

pytestmark = pytest.mark.django_db

BASE = "https://track.example.test"  # PUBLIC_BASE_URL in tests/conftest.py


def test_it_prints_the_snippets_with_the_real_ids_and_a_placeholder_key(owner_client, program):
    page = owner_client.get(f"/programs/{program.pk}/readiness").content.decode()

    tag = f'<script src="{BASE}/js/svc-tracker.js" data-svc-program-id="{program.pk}" defer></script>'
    assert tag.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;") in page
    assert f"curl -X POST {BASE}/api/v1/track/lead" in page
    assert f"curl -X POST {BASE}/api/v1/track/sale" in page
    assert page.count("Authorization: Bearer aff_...") == 2
    assert program.raw_api_key not in page and program.raw_test_api_key not in page
    assert page.count('class="copy" data-copy-target=') == 3


def test_without_a_public_base_url_the_snippets_use_the_request_host(owner_client, program, settings):
    settings.PUBLIC_BASE_URL = ""
    page = owner_client.get(f"/programs/{program.pk}/readiness", HTTP_HOST="localhost").content.decode()
    assert "curl -X POST http://localhost/api/v1/track/sale" in page


def test_it_wires_the_checklist_to_the_readiness_api(member_client, program):
    page = member_client.get(f"/programs/{program.pk}/readiness").content.decode()
    assert f'data-readiness-url="/api/tracking/readiness/{program.pk}"' in page
    assert 'src="/static/js/dashboard-readiness.js"' in page


@pytest.mark.parametrize(
    ("who", "shown"), [("owner_client", True), ("admin_role_client", True), ("member_client", False)]
)
def test_run_verification_is_offered_only_with_tracking_test(request, program, who, shown):
    page = request.getfixturevalue(who).get(f"/programs/{program.pk}/readiness").content.decode()
    assert ('id="run-verification"' in page) is shown
    assert (f'data-url="/api/tracking/run-verification/{program.pk}"' in page) is shown
