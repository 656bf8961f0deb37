"""Secrets: kept encrypted, readable after a SECRET_KEY rotation through SECRET_KEY_FALLBACKS; a rotated
endpoint signs with both secrets for the overlap, so receivers holding either verify, then with the new one."""

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import ProgramFactory
from tests.webhooks.builders import new_delivery
from tests.webhooks.conftest import endpoint_to
from webhooks.delivery import delivery_attempt
from webhooks.models import WebhookEndpoint
from webhooks.services import endpoint_create, endpoint_rotate_secret
from webhooks.signing import SECRET_PREFIX, SecretUnreadable, secret_decrypt

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def program():
    return ProgramFactory()


class TestRotation:
    def test_during_the_overlap_both_secrets_sign_and_each_alone_verifies(self, receiver, program, time_machine):
        time_machine.move_to(NOW, tick=False)
        endpoint = endpoint_to(receiver, program)
        old = receiver.secrets[0]
        new = endpoint_rotate_secret(endpoint_id=endpoint.pk).secret
        assert new != old and new.startswith(SECRET_PREFIX)
        receiver.trust(old, new)

        delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)

        [request] = receiver.requests
        signatures = request.headers["webhook-signature"].split(" ")
        assert len(signatures) == 2 and all(signature.startswith("v1,") for signature in signatures)
        assert request.verified == {old: True, new: True}  # a receiver holding only one of them verifies

    def test_after_the_overlap_only_the_new_secret_signs(self, receiver, program, time_machine, settings):
        time_machine.move_to(NOW, tick=False)
        endpoint = endpoint_to(receiver, program)
        old = receiver.secrets[0]
        new = endpoint_rotate_secret(endpoint_id=endpoint.pk).secret
        receiver.trust(old, new)

        time_machine.move_to(NOW + timedelta(hours=settings.WEBHOOK_ROTATION_OVERLAP_HOURS, seconds=-1), tick=False)
        delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)
        time_machine.move_to(NOW + timedelta(hours=settings.WEBHOOK_ROTATION_OVERLAP_HOURS), tick=False)
        delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)

        last_of_overlap, after = receiver.requests
        assert last_of_overlap.verified == {old: True, new: True}
        assert len(after.headers["webhook-signature"].split(" ")) == 1
        assert after.verified == {old: False, new: True}

    def test_rotating_again_within_the_overlap_drops_the_oldest(self, receiver, program):
        endpoint = endpoint_to(receiver, program)
        first = receiver.secrets[0]
        second = endpoint_rotate_secret(endpoint_id=endpoint.pk).secret
        third = endpoint_rotate_secret(endpoint_id=endpoint.pk).secret
        receiver.trust(first, second, third)
        delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)
        assert receiver.requests[0].verified == {first: False, second: True, third: True}


class TestStoredSecret:
    def test_the_secret_is_stored_encrypted_never_in_the_clear(self, program, settings):
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
        made = endpoint_create(
            workspace_id=program.workspace_id,
            program_id=program.pk,
            url="https://hooks.example.com/svc",
            event_types=["*"],
        )
        rotated = endpoint_rotate_secret(endpoint_id=made.endpoint.pk)
        row = WebhookEndpoint.objects.filter(pk=made.endpoint.pk).values().get()
        stored = " ".join(str(value) for value in row.values())
        body = made.secret.removeprefix(SECRET_PREFIX)
        assert made.secret not in stored and body not in stored
        assert rotated.secret.removeprefix(SECRET_PREFIX) not in stored
        assert row["secret_last4"] == rotated.secret[-4:]
        assert secret_decrypt(row["secret_encrypted"]) == rotated.secret
        assert secret_decrypt(row["previous_secret_encrypted"]) == made.secret

    def test_it_still_decrypts_and_signs_after_secret_key_changes_with_the_old_as_fallback(
        self, receiver, program, settings
    ):
        endpoint = endpoint_to(receiver, program)
        secret = receiver.secrets[0]
        old_key = settings.SECRET_KEY
        settings.SECRET_KEY = "a-new-secret-key-" + "x" * 40
        settings.SECRET_KEY_FALLBACKS = [old_key]

        assert secret_decrypt(WebhookEndpoint.objects.get(pk=endpoint.pk).secret_encrypted) == secret
        delivery_attempt(delivery_id=new_delivery(program, endpoint).pk)
        assert receiver.requests[0].verified == {secret: True}

    def test_without_the_old_key_the_secret_is_unreadable_and_the_attempt_says_so(self, receiver, program, settings):
        endpoint = endpoint_to(receiver, program)
        settings.SECRET_KEY = "a-new-secret-key-" + "x" * 40
        settings.SECRET_KEY_FALLBACKS = []

        with pytest.raises(SecretUnreadable):
            secret_decrypt(endpoint.secret_encrypted)
        delivery = new_delivery(program, endpoint)
        outcome = delivery_attempt(delivery_id=delivery.pk)
        assert outcome is not None and "another SECRET_KEY" in outcome.error
        assert receiver.requests == []
        assert delivery.attempt_log.get().error == outcome.error
