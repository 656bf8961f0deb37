"""The registries of functions an app calls but may not import (core.providers): every listed path imports and is
callable, each registry lists what it did when the providers registered themselves at start-up, in the same order,
and no registry is declared that this test does not know of."""

import ast
from collections.abc import Callable
from importlib import import_module
from typing import Any

import pytest

from billing.readiness import billing_check
from core.integrity import integrity_readiness
from core.providers import Providers
from imports.readiness import import_check
from insight.readiness import program_check_providers
from tests.core.test_app_dependencies import APPS, ROOT, _app_files

REGISTRIES = {
    "commissions.followers.status_followers": ("portal.emails.commission_email_later",),
    "commissions.followers.approval_job_followers": ("portal.emails.commission_emails_catch_up",),
    "commissions.followers.refund_followers": ("tiers.milestones.bonuses_refund_check",),
    # Before commissions' own withdrawals_fit_balance: payouts not sent yet are reduced before open withdrawals.
    "commissions.services.balance_fitters": ("payouts.ledger.payouts_fit_balance",),
    "commissions.services.paid_out_checks": ("payouts.ledger.commission_paid_out",),
    "tracking.stripe.old_platforms.old_platform_finders": ("imports.stripe_attribution.old_platform_customer",),
    "groups.admin.audit_writers": ("agent_api.audit.audit_write",),
}


def _registry(dotted: str) -> Providers[Callable[..., Any]]:
    module, name = dotted.rsplit(".", 1)
    registry = getattr(import_module(module), name)
    assert isinstance(registry, Providers)
    return registry


def _declared_registries() -> set[str]:
    """Every module-level `name: ... = Providers(...)` or `name = Providers(...)` of the apps."""
    found: set[str] = set()
    for app in APPS:
        for path in _app_files(app):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            for node in ast.parse(path.read_text(), filename=str(path)).body:
                if isinstance(node, ast.AnnAssign):
                    targets: list[ast.expr] = [node.target]
                    value = node.value
                elif isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                else:
                    continue
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "Providers":
                    found.update(f"{module}.{target.id}" for target in targets if isinstance(target, ast.Name))
    return found


def test_every_registry_is_known_here():
    assert _declared_registries() == set(REGISTRIES)


@pytest.mark.parametrize("dotted", sorted(REGISTRIES))
def test_each_registry_lists_its_providers_in_order_and_each_imports_and_is_callable(dotted):
    registry = _registry(dotted)
    assert registry.paths == REGISTRIES[dotted]
    functions = list(registry)
    assert len(functions) == len(registry.paths)
    assert all(callable(function) for function in functions)
    assert [f"{function.__module__}.{function.__qualname__}" for function in functions] == list(registry.paths)


def test_a_provider_sits_above_its_registry():
    """A provider named by path belongs to another app than its registry's (an app calls its own directly)."""
    for dotted, paths in REGISTRIES.items():
        assert all(path.split(".")[0] != dotted.split(".")[0] for path in paths), dotted


def test_readiness_imports_its_providers_in_order():
    """insight sits above them, so it lists them as a plain tuple: the integrity run, the last import, the billing
    platforms."""
    assert program_check_providers == (integrity_readiness, import_check, billing_check)
