"""Real exports run to tens of megabytes: the Import page's POST may carry up to IMPORT_UPLOAD_MAX_BYTES (plus the
form's fields), while every other route keeps the 2.5 MiB body limit (core.middleware.RequestLimitsMiddleware)."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from core.middleware import body_limit
from imports.models import ImportUpload
from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory

pytestmark = pytest.mark.django_db

MB = 1024 * 1024


def rewardful_affiliates(count: int) -> bytes:
    """Rewardful's affiliates list (GET /v1/affiliates) with `count` affiliates, each with one link."""
    return json.dumps(
        {
            "data": [
                {
                    "id": f"aff-{n:06d}-" + "0" * 24,
                    "email": f"partner{n}@example.com",
                    "first_name": "Partner",
                    "last_name": f"Number {n}",
                    "paypal_email": f"pay{n}@example.com",
                    "links": [{"id": f"link-{n}", "url": f"https://shop.example.com/?via=p{n}", "token": f"p{n}"}],
                }
                for n in range(count)
            ]
        }
    ).encode()


@pytest.fixture
def owner():
    program = ProgramFactory(name="Acme")
    browser = Client()
    browser.force_login(MembershipFactory.create(workspace=program.workspace, role=Role.OWNER).user)
    return browser, program


def test_an_export_over_the_general_body_limit_is_read_by_the_import_page(owner, settings):
    browser, program = owner
    content = rewardful_affiliates(12_000)
    assert len(content) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    response = browser.post(
        f"/programs/{program.pk}/import",
        {"platform": "rewardful", "files": [SimpleUploadedFile("affiliates.json", content)]},
    )
    assert response.status_code == 302, response.content[:300]
    upload = ImportUpload.objects.get()
    assert upload.size == len(content) and upload.report["counts"]["partner"]["created"] == 12_000


def test_the_import_page_has_its_own_limit_and_every_other_route_keeps_the_general_one(owner, settings):
    browser, program = owner
    settings.LARGE_BODY_PATHS = ((r"/programs/\d+/import", 3 * MB),)
    assert body_limit(f"/programs/{program.pk}/import") == 3 * MB
    assert body_limit(f"/programs/{program.pk}/import/uploads/1/confirm") == settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    assert body_limit("/api/v1/track/sale") == settings.DATA_UPLOAD_MAX_MEMORY_SIZE

    over = SimpleUploadedFile("affiliates.json", b"x" * (3 * MB + 1))
    refused = browser.post(f"/programs/{program.pk}/import", {"platform": "rewardful", "files": [over]})
    assert refused.status_code == 413
    elsewhere = browser.post(
        f"/programs/{program.pk}/webhooks/new", {"files": [SimpleUploadedFile("a.json", b"x" * (2 * MB + 700_000))]}
    )
    assert elsewhere.status_code == 413
    assert not ImportUpload.objects.exists()
