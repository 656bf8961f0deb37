"""Secret handling for program and agent keys: generate, hash, mask. Keys are never stored."""

import hashlib
import hmac
import secrets

PROGRAM_KEY_PREFIX = "aff_"
PROGRAM_TEST_KEY_PREFIX = "aff_test_"
AGENT_KEY_PREFIX = "agt_"


def key_digest(raw_key: str) -> str:
    # Keys carry 256 bits of randomness, so a fast unsalted hash is enough to make a leaked table useless.
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


def digests_match(stored: str, candidate: str) -> bool:
    return hmac.compare_digest(stored.encode("ascii"), candidate.encode("ascii"))


def generate_key(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def mask_key(prefix: str, last4: str) -> str:
    return f"{prefix}{'*' * 12}{last4}"


def key_prefix_of(raw_key: str) -> str:
    for prefix in (PROGRAM_TEST_KEY_PREFIX, PROGRAM_KEY_PREFIX, AGENT_KEY_PREFIX):
        if raw_key.startswith(prefix):
            return prefix
    return ""
