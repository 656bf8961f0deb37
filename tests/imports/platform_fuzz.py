"""Junk in an export never breaks a reader: mutated copies of the fixture files (keys dropped, values of the wrong
type, huge or negative numbers, nested objects where text was expected) either read, with the bad rows refused and
named, or are refused as a whole with ImportFileError. Nothing else may escape."""

import json
import random
import re
from typing import Any

from imports.platforms import PLATFORMS
from imports.records import ImportFileError, Source
from tests.imports.fixtures.build import files

JUNK: list[Any] = [
    None,
    "",
    " ",
    0,
    -1,
    1.5,
    10**30,
    -(10**30),
    1e308,
    True,
    [],
    {},
    ["x"],
    {"id": None},
    "not-an-email",
    "2025-13-45T99:99:99Z",
    "12.345",
    "\x00",
    "ü" * 300,
]
WHERE = re.compile(r"^.+ (line|item) \d+$")


def mutate(value: Any, rng: random.Random, depth: int = 0) -> Any:
    if isinstance(value, dict) and value:
        out = dict(value)
        for key in rng.sample(sorted(out), k=min(len(out), rng.randint(1, 3))):
            roll = rng.random()
            if roll < 0.3:
                del out[key]
            elif roll < 0.8 or depth > 2:
                out[key] = rng.choice(JUNK)
            else:
                out[key] = mutate(out[key], rng, depth + 1)
        return out
    if isinstance(value, list) and value:
        return [mutate(item, rng, depth + 1) if rng.random() < 0.5 else item for item in value]
    return rng.choice(JUNK)


def check_junk(platform: str, rounds: int = 60, items: int = 12, *, currency: str = "") -> None:
    """`currency`: the owner's answer for a platform whose files carry none (Platform.asks_currency)."""
    rng = random.Random(f"{platform}-junk")
    reader = PLATFORMS[platform]
    originals = [(name, json.loads(content.decode("utf-8-sig"))) for name, content in files(platform)]
    for _ in range(rounds):
        uploaded = []
        for name, payload in originals:
            rows = payload["data"] if isinstance(payload, dict) else payload
            if isinstance(rows, dict):
                rows = rows["items"]
            rows = [mutate(row, rng) if rng.random() < 0.4 else row for row in rows[:items]]
            uploaded.append((name, json.dumps(rows).encode()))
        try:
            source = reader.read(uploaded, currency=currency)
        except ImportFileError:
            continue
        assert isinstance(source, Source)
        for rows in (source.partners, source.links, source.referrals, source.commissions, source.refusals):
            for row in rows:
                assert WHERE.match(row.where), row
        for row in source.commissions:
            assert row.commission_amount_minor >= 0 and row.sale_amount_minor >= 0
            assert row.status in ("pending", "approved", "paid", "void")
