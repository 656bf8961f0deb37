"""Messages live in the messages modules (core/messages.py, cli_api/messages.py): no application error is
raised with a string written at the raise, so code and tests share one text."""

import ast
import inspect
from pathlib import Path

from django.conf import settings

from core import errors
from programs.stripe_connect import StripeConnectError

APPS = ("core", "programs", "tracking", "commissions", "cli_api", "dashboard", "agent_api", "webhooks")
USER_FACING_ERRORS = {
    name for name, value in vars(errors).items() if inspect.isclass(value) and issubclass(value, errors.ApiError)
} | {StripeConnectError.__name__}


def _literal_messages(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        first = node.args[0]
        written_here = (isinstance(first, ast.Constant) and isinstance(first.value, str)) or (
            isinstance(first, ast.JoinedStr) and any(isinstance(part, ast.Constant) for part in first.values)
        )
        if callee in USER_FACING_ERRORS and written_here and not _only_punctuation(first):
            found.append(f"{path.relative_to(settings.BASE_DIR)}:{node.lineno}")
    return found


def _only_punctuation(node: ast.expr) -> bool:
    """f"{message}." adds a full stop to a messages constant: no wording of its own."""
    if not isinstance(node, ast.JoinedStr):
        return False
    text = "".join(part.value for part in node.values if isinstance(part, ast.Constant) and isinstance(part.value, str))
    return not any(character.isalnum() for character in text)


def test_no_application_error_is_raised_with_a_message_written_in_place():
    base = Path(settings.BASE_DIR)
    sources = [path for app in APPS for path in (base / app).rglob("*.py") if "migrations" not in path.parts]
    assert sources
    offenders = [place for path in sources for place in _literal_messages(path)]
    assert offenders == []
