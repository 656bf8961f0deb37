"""Signing secrets: made, kept encrypted, and used to sign with the standardwebhooks library.

A secret is `whsec_` and 32 random bytes in base64, the Standard Webhooks form every receiver library reads. It
must be readable again to sign, so it is stored encrypted (Fernet) under a key derived from SECRET_KEY; the
SECRET_KEY_FALLBACKS still decrypt, so rotating SECRET_KEY the Django way keeps every endpoint working."""

import base64
import hashlib
import secrets
from datetime import datetime

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from standardwebhooks.webhooks import Webhook

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def secret_generate() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def _fernet_for(key: str) -> Fernet:
    digest = hashlib.sha256(b"svc.webhooks.secret-encryption:" + key.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def _fernet() -> MultiFernet:
    keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([_fernet_for(key) for key in keys])


def secret_encrypt(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


class SecretUnreadable(Exception):
    """The stored secret was encrypted under a SECRET_KEY no longer configured (neither current nor fallback)."""


def secret_decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable("the endpoint's secret was encrypted under another SECRET_KEY") from None


def signature_header(*, secrets_: list[str], message_id: str, timestamp: datetime, body: str) -> str:
    """webhook-signature: one `v1,<base64>` per secret, space-separated (the current secret first)."""
    return " ".join(Webhook(secret).sign(message_id, timestamp, body) for secret in secrets_)
