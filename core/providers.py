"""A registry of functions an app calls but may not import, because they belong to apps above it (commissions calling
the portal's emails and the payouts' ledger, tracking calling the imports app's finder). The registry, in the module
that calls them, names them by dotted path in the order they run, so a reader sees every provider in one place and
the app dependency test still holds; they are imported once, on first use (every app is loaded by then).

An app that may import its providers (insight, above all of them) lists them in a plain tuple instead."""

from collections.abc import Callable, Iterator
from functools import cached_property
from typing import Any, Generic, TypeVar, cast

from django.utils.module_loading import import_string

FunctionT = TypeVar("FunctionT", bound=Callable[..., Any])


class Providers(Generic[FunctionT]):
    """Iterates over the functions at `paths`, in their order."""

    def __init__(self, *paths: str) -> None:
        self.paths = paths

    @cached_property
    def functions(self) -> tuple[FunctionT, ...]:
        return tuple(cast(FunctionT, import_string(path)) for path in self.paths)

    def __iter__(self) -> Iterator[FunctionT]:
        return iter(self.functions)

    def __repr__(self) -> str:
        return f"Providers{self.paths!r}"
