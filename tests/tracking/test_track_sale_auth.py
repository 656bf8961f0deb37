"""POST /api/v1/track/sale: Which keys POST /api/v1/track/sale accepts."""

from datetime import timedelta

import pytest
from django.utils import timezone

from core import messages
from programs.models import ProgramKey
from programs.services import program_key_mark_rotation
from tests.helpers import platform_error
from tests.tracking.sales import URL, nothing_recorded, post_sale, sale_body

pytestmark = pytest.mark.django_db


class TestAuthentication:
    @pytest.mark.parametrize(
        ("header", "message"),
        [
            (None, messages.MISSING_AUTH_HEADER),
            ("Basic dXNlcjpwYXNz", messages.MISSING_AUTH_HEADER),
            ("aff_live_key_without_scheme", messages.MISSING_AUTH_HEADER),
            ("Bearer ", messages.MISSING_API_TOKEN),
            ("Bearer    ", messages.MISSING_API_TOKEN),
            ("Bearer aff_does_not_exist", messages.INVALID_API_TOKEN),
        ],
        ids=["missing", "basic", "no-scheme", "empty-token", "blank-token", "unknown-token"],
    )
    def test_it_refuses_a_missing_or_unknown_key(self, api_client, customer, header, message):
        extra = {"HTTP_AUTHORIZATION": header} if header else {}
        response = api_client.post(URL, sale_body(), format="json", **extra)
        assert response.status_code == 401
        assert response.json() == platform_error(401, "UnauthorizedError", message, "unauthorized")
        assert response["WWW-Authenticate"] == "Bearer"
        assert nothing_recorded()

    def test_test_mode_still_needs_the_key(self, api_client, customer):
        response = api_client.post(URL, sale_body(additional_data={"test_mode": True}), format="json")
        assert response.status_code == 401
        assert response.json()["error"]["message"] == messages.MISSING_AUTH_HEADER
        assert nothing_recorded()

    def test_a_retired_key_gets_the_typed_rotation_error(self, api_client, program, customer):
        key = ProgramKey.objects.get(program=program, mode="live")
        program_key_mark_rotation(key=key, deadline=timezone.now() - timedelta(seconds=1))
        response = post_sale(api_client, program, **sale_body())
        assert response.status_code == 401
        body = response.json()
        assert "data" not in body
        assert body["error"]["code"] == "api_key_rotation_required"
        assert nothing_recorded()
