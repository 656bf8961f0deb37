"""Hand-written SQL lives in one module per app (SQL_HOMES), each statement with its reason: the comment right above
it says why it is not the ORM. Elsewhere the apps call those modules, so a reader finds every statement that
bypasses the ORM (and its save() and signals) in one place per app.

SQL text is a string written in a module (a docstring is prose) that reads as SQL: a statement's or a clause's
keywords in capitals, a cast of a placeholder, a quoted column compared with one; or a call that writes SQL into a
query (RawSQL, .raw(), .extra(), core.sql's text builders). The apps' modules are scanned; migrations and tests are
left out, as in tests/core/test_app_dependencies.py."""

import ast
import re
from pathlib import Path

from tests.core.test_app_dependencies import APPS, ROOT, _app_files

# app -> the module holding its hand-written SQL. An app not listed holds none.
SQL_HOMES = {
    # core/sql.py: statements built from the models (the hot paths' INSERTs, model rows read back, COPY);
    # core/statements.py: those that name no model (the health probe, the integrity runner's, the counter file's).
    "core": ("core/sql.py", "core/statements.py"),
    "programs": ("programs/sql.py",),
    "tracking": ("tracking/sql.py",),
    # The checks written as SQL are the app's only SQL: its integrity module is its SQL module.
    "commissions": ("commissions/integrity.py",),
    "payouts": ("payouts/integrity.py",),
    "webhooks": ("webhooks/sql.py",),
    "insight": ("insight/sql.py",),
}
# Its builders share the one reason its docstring gives (the hot paths' statements in as few round trips, and
# compiled as few times, as the database allows).
REASON_IN_DOCSTRING = ("core/sql.py",)

# Modules whose statements have yet to join their app's home (none left).
NOT_MOVED_YET: tuple[str, ...] = ()

_WORDS = (
    r"SELECT|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|WITH\s+\w+\s+AS|GROUP\s+BY|ORDER\s+BY|JOIN|WHERE"
    r"|CASE\s+WHEN|SET\s+LOCAL|PRAGMA|CREATE\s+TABLE|EXISTS|UNION|LIMIT|COPY"
)
SQL_TEXT = re.compile(rf"\b(?:{_WORDS})\b|%s::\w|\"\w+\"\s*(?:=|<>|<=|>=|<|>)\s*%s")
# Calls that put SQL text into a query: by name, and as methods of a manager or a QuerySet.
SQL_CALLS = {"RawSQL", "select_columns_sql", "insert_sql"}
SQL_METHODS = {"raw", "extra"}


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _is_sql_call(node: ast.Call) -> bool:
    function = node.func
    if isinstance(function, ast.Name):
        return function.id in SQL_CALLS
    if isinstance(function, ast.Attribute):
        return function.attr in SQL_CALLS or (
            function.attr in SQL_METHODS and "objects" in ast.unparse(function.value).split(".")
        )
    return False


def sql_lines(tree: ast.AST, docstrings: set[int] | None = None) -> list[int]:
    """The lines of `tree` where SQL text is written."""
    docstrings = _docstrings(tree) if docstrings is None else docstrings
    parts_of_fstrings = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    lines: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            # A placeholder stands for each value: f"UPDATE {table} SET" reads as "UPDATE x SET".
            text = "".join(str(part.value) if isinstance(part, ast.Constant) else "x" for part in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings or id(node) in parts_of_fstrings:
                continue
            text = node.value
        elif isinstance(node, ast.Call) and _is_sql_call(node):
            lines.append(node.lineno)
            continue
        else:
            continue
        if SQL_TEXT.search(text):
            lines.append(node.lineno)
    return sorted(set(lines))


def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def sql_outside_homes() -> list[str]:
    found: list[str] = []
    for app in APPS:
        homes = SQL_HOMES.get(app, ())
        for path in _app_files(app):
            relative = str(path.relative_to(ROOT))
            if relative in homes or relative in NOT_MOVED_YET:
                continue
            found.extend(f"{relative}:{line}" for line in sql_lines(_parsed(path)))
    return found


def test_sql_is_written_only_in_its_apps_sql_module():
    """A statement written elsewhere moves to its app's module in SQL_HOMES (or the app's module is added there),
    with its reason; the caller runs it from there."""
    assert sql_outside_homes() == []


def _comment_above(lines: list[str], node: ast.stmt) -> str:
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(decorator.lineno for decorator in decorators)]) - 1
    comment: list[str] = []
    while start > 0 and lines[start - 1].strip().startswith("#"):
        start -= 1
        comment.insert(0, lines[start].strip())
    return " ".join(comment)


def statements_without_reason(path: Path) -> list[str]:
    """The top-level definitions of a home that write SQL text without a comment right above them naming the ORM."""
    tree = _parsed(path)
    docstrings = _docstrings(tree)
    lines = path.read_text().splitlines()
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for node in tree.body
        if sql_lines(node, docstrings) and "ORM" not in _comment_above(lines, node)
    ]


def test_each_statement_says_why_it_is_not_the_orm():
    missing = [
        where
        for homes in SQL_HOMES.values()
        for home in homes
        if home not in REASON_IN_DOCSTRING
        for where in statements_without_reason(ROOT / home)
    ]
    assert missing == []


def test_every_home_and_known_exception_holds_sql():
    """A home left without SQL, or an exception whose statements have moved, leaves these lists."""
    listed = [*(home for homes in SQL_HOMES.values() for home in homes), *NOT_MOVED_YET]
    assert [path for path in listed if not (ROOT / path).exists() or not sql_lines(_parsed(ROOT / path))] == []


def test_sql_text_is_told_from_prose():
    source = '''
"""Reads with SELECT in its docstring: prose."""
from django.db.models.expressions import RawSQL

MESSAGE = "Select where the link goes"
QUERY = "SELECT 1"


def probe(table):
    """SELECT in a docstring is prose too."""
    column = '"click_id" = %s'
    cast = "(%s::jsonb)"
    update = f"UPDATE {table} SET n = n + 1"
    raw = RawSQL("1", [])
    rows = Link.objects.raw("x")
    return column, cast, update, raw, rows
'''
    assert sql_lines(ast.parse(source)) == [6, 11, 12, 13, 14, 15]
