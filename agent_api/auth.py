"""Agent-key authentication for /api/agent/v1/. Only an agent key (`agt_`) authenticates: a program key, a CLI
login token or a dashboard session gets 401 saying which credential it is and what to send instead."""

from datetime import timedelta

from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from cli_api.models import LOGIN_TOKEN_PREFIX
from core.api.auth import bearer_token
from core.errors import UnauthorizedError
from programs.keys import AGENT_KEY_PREFIX, PROGRAM_KEY_PREFIX, digests_match, key_digest
from programs.models import AgentKey
from programs.selectors import program_key_get_by_raw

from . import messages

# last_used_at is written at most this often per key: a busy agent must not turn every read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def _refused(message: str, code: str) -> UnauthorizedError:
    return UnauthorizedError(message, code=code, headers={"WWW-Authenticate": 'Bearer realm="agent"'})


def agent_key_get_by_raw(raw_key: str) -> AgentKey | None:
    """The agent key whose digest matches raw_key exactly (one indexed query, workspace joined)."""
    digest = key_digest(raw_key)
    key = next(iter(AgentKey.objects.select_related("workspace").filter(digest=digest)[:1]), None)
    if key is None or not digests_match(key.digest, digest):
        return None
    return key


def agent_key_authenticate(raw_key: str | None) -> AgentKey:
    """The usable agent key sent, or the 401 that says what is wrong with the credential."""
    if not raw_key:
        raise _refused(messages.KEY_REQUIRED, messages.CODE_KEY_REQUIRED)
    if not raw_key.startswith(AGENT_KEY_PREFIX):
        if raw_key.startswith(LOGIN_TOKEN_PREFIX):
            raise _refused(messages.LOGIN_TOKEN_REFUSED, messages.CODE_WRONG_CREDENTIAL)
        # Program keys issued before the aff_ prefix have none: recognised by lookup, on this failure path only.
        if raw_key.startswith(PROGRAM_KEY_PREFIX) or program_key_get_by_raw(raw_key) is not None:
            raise _refused(messages.PROGRAM_KEY_REFUSED, messages.CODE_WRONG_CREDENTIAL)
        raise _refused(messages.KEY_INVALID, messages.CODE_KEY_INVALID)
    key = agent_key_get_by_raw(raw_key)
    if key is None:
        raise _refused(messages.KEY_INVALID, messages.CODE_KEY_INVALID)
    now = timezone.now()
    if key.revoked_at is not None:
        raise _refused(messages.KEY_REVOKED, messages.CODE_KEY_REVOKED)
    if key.expires_at is not None and key.is_expired(now):
        raise _refused(messages.KEY_EXPIRED.format(expired_at=key.expires_at.isoformat()), messages.CODE_KEY_EXPIRED)
    if key.workspace is None:
        raise _refused(messages.KEY_UNBOUND, messages.CODE_KEY_INVALID)
    if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
        AgentKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


class AgentKeyAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[AnonymousUser, AgentKey]:
        key = agent_key_authenticate(bearer_token(request.META.get("HTTP_AUTHORIZATION", "")))
        return (AnonymousUser(), key)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="agent"'
