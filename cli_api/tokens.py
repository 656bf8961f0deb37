"""The id_token that completes a CLI login (POST /api/v1/cli/auth/callback) and how it is verified.

Two issuers are accepted, told apart by the token's `iss` claim:
- this service: the /cli/login confirmation page issues a token for the signed-in dashboard user (HS256 with a key
  derived from SECRET_KEY, 2 minutes, bound to the login session by its `sid` claim);
- an OIDC provider, when OIDC_ISSUER, OIDC_AUDIENCE and OIDC_JWKS_URL are set: an ID token signed with one of the
  keys the provider publishes (fetched with jwt.PyJWKClient), audience and issuer checked. The account is found by
  the token's `email`, which the provider must say is verified.
"""

from dataclasses import dataclass
from datetime import timedelta

import jwt
from django.conf import settings
from django.utils import timezone
from django.utils.crypto import salted_hmac

from core.ids import id_parse

SERVICE_ISSUER = "urn:svc-tracking"
SERVICE_AUDIENCE = "urn:svc-tracking:cli-login"
SERVICE_TOKEN_LIFETIME = timedelta(minutes=2)
# Asymmetric algorithms only: a provider token is never verified with a shared secret.
PROVIDER_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
# Clock skew tolerated between us and the provider.
LEEWAY_SECONDS = 30
JWKS_TIMEOUT_SECONDS = 5


class IdTokenInvalid(Exception):
    """The id_token is malformed, badly signed, expired, for another audience or issuer, or for another session."""


@dataclass(frozen=True)
class Identity:
    provider: bool  # False: issued by this service
    user_id: int | None = None  # this service's tokens name the user
    email: str = ""  # provider tokens name an email address
    email_verified: bool = False


def oidc_configured() -> bool:
    return bool(settings.OIDC_ISSUER and settings.OIDC_AUDIENCE and settings.OIDC_JWKS_URL)


def _service_key() -> bytes:
    # A key of its own, so a token of this kind can never be confused with anything else signed with SECRET_KEY.
    return salted_hmac("cli_api.tokens.id_token", "signing-key", algorithm="sha256").digest()


def id_token_issue(*, user_id: int, session_digest: str) -> str:
    """A short-lived id_token for `user_id`, usable only with the login session whose state has this digest."""
    now = timezone.now()
    claims = {
        "iss": SERVICE_ISSUER,
        "aud": SERVICE_AUDIENCE,
        "sub": str(user_id),
        "sid": session_digest,
        "iat": int(now.timestamp()),
        "exp": int((now + SERVICE_TOKEN_LIFETIME).timestamp()),
    }
    return jwt.encode(claims, _service_key(), algorithm="HS256")


_jwks_clients: dict[str, jwt.PyJWKClient] = {}


def _jwks_client(url: str) -> jwt.PyJWKClient:
    # One client per URL and process: it caches the provider's keys (5 minutes) and refetches on an unknown kid.
    client = _jwks_clients.get(url)
    if client is None:
        client = jwt.PyJWKClient(url, cache_keys=True, lifespan=300, timeout=JWKS_TIMEOUT_SECONDS)
        _jwks_clients[url] = client
    return client


def jwks_clients_reset() -> None:
    _jwks_clients.clear()


def id_token_verify(id_token: str, *, session_digest: str) -> Identity:
    """Verifies the signature and claims. Raises IdTokenInvalid; a provider that cannot be reached raises
    jwt.PyJWKClientConnectionError, which is a server failure, not the caller's."""
    try:
        issuer = jwt.decode(id_token, options={"verify_signature": False}).get("iss")
    except jwt.PyJWTError:
        raise IdTokenInvalid from None
    if issuer == SERVICE_ISSUER:
        return _service_identity(id_token, session_digest=session_digest)
    if oidc_configured() and issuer == settings.OIDC_ISSUER:
        return _provider_identity(id_token)
    raise IdTokenInvalid


def _service_identity(id_token: str, *, session_digest: str) -> Identity:
    try:
        claims = jwt.decode(
            id_token,
            _service_key(),
            algorithms=["HS256"],
            audience=SERVICE_AUDIENCE,
            issuer=SERVICE_ISSUER,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "iss", "aud", "sub", "sid"]},
        )
    except jwt.PyJWTError:
        raise IdTokenInvalid from None
    # Minted for one login session: a token lifted from one confirmation cannot complete another.
    user_id = id_parse(claims["sub"])
    if claims["sid"] != session_digest or user_id is None:
        raise IdTokenInvalid
    return Identity(provider=False, user_id=user_id)


def _provider_identity(id_token: str) -> Identity:
    try:
        signing_key = _jwks_client(settings.OIDC_JWKS_URL).get_signing_key_from_jwt(id_token)
    except jwt.PyJWKClientConnectionError:
        raise
    except jwt.PyJWTError:
        raise IdTokenInvalid from None
    try:
        claims = jwt.decode(
            id_token,
            signing_key.key,
            algorithms=PROVIDER_ALGORITHMS,
            audience=settings.OIDC_AUDIENCE,
            issuer=settings.OIDC_ISSUER,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
    except jwt.PyJWTError:
        raise IdTokenInvalid from None
    email = claims.get("email")
    if not isinstance(email, str) or not email.strip():
        raise IdTokenInvalid
    # Some providers send the flag as a string. A missing flag is not a verified address.
    verified = claims.get("email_verified") in (True, "true")
    return Identity(provider=True, email=email.strip(), email_verified=verified)
