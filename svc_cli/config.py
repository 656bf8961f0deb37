"""Where `svc login` keeps its token: credentials.json in the user's config directory (SVC_CONFIG_DIR when set,
else the platform's, e.g. ~/.config/svc), readable by its owner only (0600)."""

import json
import os
from pathlib import Path
from typing import Any

import typer

FILE_NAME = "credentials.json"


def config_dir() -> Path:
    override = os.environ.get("SVC_CONFIG_DIR", "").strip()
    return Path(override) if override else Path(typer.get_app_dir("svc"))


def credentials_path() -> Path:
    return config_dir() / FILE_NAME


def credentials_load() -> dict[str, Any] | None:
    path = credentials_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing or unreadable: not logged in
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(name), str) for name in ("token", "base_url")):
        return None
    return data


def credentials_save(data: dict[str, Any]) -> Path:
    """Writes atomically, created with mode 0600 so the token is never readable by others, even for a moment."""
    directory = config_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / FILE_NAME
    temporary = directory / f".{FILE_NAME}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)  # whatever the umask or a leftover file's mode
            json.dump(data, handle, indent=2)
            handle.write("\n")
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    os.replace(temporary, path)
    return path


def credentials_delete() -> bool:
    try:
        credentials_path().unlink()
    except FileNotFoundError:
        return False
    return True
