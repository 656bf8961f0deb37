"""Environment access in one place: typed reads that fail loudly on garbage."""

import os
import secrets
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)


def env_float(name: str, default: float) -> float:
    raw = env.str(name, default="")
    if raw == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from exc
    if value <= 0:
        raise ImproperlyConfigured(f"{name} must be positive, got {raw!r}")
    return value


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = env.str(name, default="")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}") from exc
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {raw!r}")
    return value


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def env_bool(name: str, default: bool) -> bool:
    """Only the usual spellings; django-environ's env.bool reads any unknown word (`ture`) as false."""
    raw = env.str(name, default="").strip()
    if raw == "":
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of true/false, 1/0, yes/no, on/off; got {raw!r}")


def dev_secret_key(path: Path) -> str:
    """One key per checkout for development, generated into `path` the first time. Every process of a server
    must sign with the same key, and several may start at once: each writes a candidate to a temporary file and
    links it into place only if nothing is there yet, so the first link wins and everyone reads that one."""
    if not path.exists():
        candidate = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        descriptor = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w") as file:
                file.write("dev-" + secrets.token_urlsafe(40) + "\n")
            try:
                os.link(candidate, path)
            except FileExistsError:
                pass  # another process won; its key is the one
        finally:
            candidate.unlink(missing_ok=True)
    key = path.read_text().strip()
    if not key:
        raise ImproperlyConfigured(f"{path} is empty: delete it to generate a new development key")
    return key
