"""What a contract case is and how it is sent: one request (after an optional setup) to a documented operation,
with the status it must answer. The surfaces' tables are in tests/contract/test_*_contracts.py."""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from .schema import assert_documented
from .world import UNKNOWN_ID, World

# Which object of the world a path parameter names.
PATH_IDS = {
    "program_id": "program",
    "commission_id": "commission",
    "link_id": "link",
    "partner_id": "partner",
    "withdrawal_id": "withdrawal",
    "endpoint_id": "endpoint",
    "delivery_id": "delivery",
    "application_id": "application",
    "run_id": "run",
    "payout_id": "payout",
    "group_id": "group",
    "rule_id": "tier_rule",
    "bonus_id": "bonus",
    "code_id": "coupon_code",
}
PATH_LITERALS = {"rule": "bot"}
PARAMETER = re.compile(r"\{(\w+)\}")

Body = dict[str, Any] | list[Any] | Callable[[World], Any] | None


@dataclass(frozen=True)
class Case:
    """A request to METHOD path (as documented) answered with `status`. `url` overrides the path the request goes
    to (a format string over the world's ids); `body` and `query` may be functions of the world; `before` runs
    first (what makes a 409 or a 410)."""

    method: str
    path: str
    status: int
    label: str
    client: str
    body: Body = None
    query: dict[str, Any] | Callable[[World], dict[str, Any]] | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    before: Callable[[World], Any] | None = None

    @property
    def id(self) -> str:
        return f"{self.method} {self.path} {self.status} {self.label}"

    def target(self, world: World) -> str:
        if self.url is not None:
            return self.url.format(**world.ids)

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            return PATH_LITERALS.get(name) or str(world.ids[PATH_IDS[name]])

        return PARAMETER.sub(value, self.path)

    def send(self, world: World) -> Any:
        if self.before is not None:
            self.before(world)
        client: Any = world.clients[self.client]
        url = self.target(world)
        query = self.query(world) if callable(self.query) else self.query
        body = self.body(world) if callable(self.body) else self.body
        if self.method == "GET":
            return client.get(url, query or {}, **self.headers)
        if query:
            url = f"{url}?{urlencode(query)}"
        send = getattr(client, self.method.lower())
        if body is None:
            return send(url, **self.headers)
        return send(url, body, format="json", **self.headers)


def unknown_id_url(path: str) -> str:
    """The path with its first id naming nothing, the others (and literals) as in the world."""
    first = True

    def value(match: re.Match[str]) -> str:
        nonlocal first
        name = match.group(1)
        if name in PATH_IDS and first:
            first = False
            return str(UNKNOWN_ID)
        return PATH_LITERALS.get(name) or "{" + PATH_IDS[name] + "}"

    return PARAMETER.sub(value, path)


def has_id(path: str) -> bool:
    return any(name in PATH_IDS for name in PARAMETER.findall(path))


def case_check(case: Case, world: World, schema: dict[str, Any]) -> None:
    """Sends the case and checks its answer: the expected status, then what the description says of it."""
    response = case.send(world)
    assert response.status_code == case.status, (case.id, response.status_code, response.content[:600])
    assert_documented(schema, case.path, case.method, response)
