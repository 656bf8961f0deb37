"""The apps depend one way: core knows no feature app, and the graph of imports between apps has no cycle.

Every import counts, at the top of a module or inside a function (a function-level import that dodges an
import cycle is still a dependency). Migrations and tests are left out: they are not the apps' code."""

import ast
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = (
    "core",
    "programs",
    "tracking",
    "commissions",
    "cli_api",
    "dashboard",
    "agent_api",
    "webhooks",
    "fraud",
    "payouts",
    "portal",
    "imports",
    "insight",
    "groups",
    "tiers",
    "billing",
)
FEATURE_APPS = tuple(app for app in APPS if app != "core")


def _app_files(app: str) -> list[Path]:
    return [
        path
        for path in sorted((ROOT / app).rglob("*.py"))
        if "migrations" not in path.parts and not path.name.startswith("test")
    ]


def _imported_modules(tree: ast.AST) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
    return modules


def app_import_graph() -> dict[str, dict[str, list[str]]]:
    """app -> {other app it imports -> the importing files}."""
    graph: dict[str, dict[str, list[str]]] = {app: {} for app in APPS}
    for app in APPS:
        for path in _app_files(app):
            for module in _imported_modules(ast.parse(path.read_text(), filename=str(path))):
                target = module.split(".")[0]
                if target in APPS and target != app:
                    graph[app].setdefault(target, []).append(str(path.relative_to(ROOT)))
    return graph


def find_cycle(graph: dict[str, dict[str, list[str]]]) -> list[str] | None:
    """One cycle of the graph as [a, b, ..., a], or None."""
    visiting: list[str] = []
    done: set[str] = set()

    def visit(app: str) -> list[str] | None:
        if app in visiting:
            return [*visiting[visiting.index(app) :], app]
        if app in done:
            return None
        visiting.append(app)
        for target in sorted(graph[app]):
            cycle = visit(target)
            if cycle:
                return cycle
        visiting.pop()
        done.add(app)
        return None

    for app in APPS:
        cycle = visit(app)
        if cycle:
            return cycle
    return None


def test_core_imports_no_feature_app():
    graph = app_import_graph()
    assert {target: files for target, files in graph["core"].items() if target in FEATURE_APPS} == {}


def test_the_app_import_graph_has_no_cycle():
    graph = app_import_graph()
    cycle = find_cycle(graph)
    where = {f"{a} -> {b}": graph[a][b] for a, b in pairwise(cycle)} if cycle else {}
    assert cycle is None, where


def test_programs_imports_only_core_and_webhooks():
    """webhooks, like core, imports no feature app (below), so programs still depends on no feature app; it
    imports webhooks to announce an enrolment in the enrolment's transaction."""
    assert set(app_import_graph()["programs"]) <= {"core", "webhooks"}


def test_groups_imports_only_core_webhooks_and_programs():
    """Commissions and tracking read a partner's group terms and codes, so groups sits below them; what judges
    figures and pays bonuses (tiers) sits above, and the admin's audit writer is named (groups.admin.audit_writers)."""
    assert set(app_import_graph()["groups"]) <= {"core", "webhooks", "programs"}


def test_fraud_imports_only_core_and_programs():
    """The rules and their settings know programs only; tracking and commissions apply them."""
    assert set(app_import_graph()["fraud"]) <= {"core", "programs"}


def test_a_cycle_is_found_when_there_is_one():
    graph = {app: {} for app in APPS}
    graph["tracking"] = {"commissions": ["tracking/x.py"]}
    graph["commissions"] = {"programs": ["commissions/x.py"]}
    graph["programs"] = {"tracking": ["programs/x.py"]}
    assert find_cycle(graph) == ["programs", "tracking", "commissions", "programs"]
    graph["programs"] = {}
    assert find_cycle(graph) is None


def _is_project_import(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] in APPS
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] in APPS for alias in node.names)
    return False


def _function_level_imports(path: Path) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for function in ast.walk(ast.parse(path.read_text(), filename=str(path)))
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(function)
        if isinstance(node, ast.Import | ast.ImportFrom) and _is_project_import(node)
    ]


def test_no_module_imports_project_code_inside_a_function():
    """Within an app too, modules depend one way: an import inside a function (commissions/services.py once
    imported its own tasks that way) hides a cycle. AppConfig.ready() is where Django wants late imports."""
    found = [
        where
        for app in APPS
        for path in _app_files(app)
        if path.name != "apps.py"
        for where in _function_level_imports(path)
    ]
    assert found == []


def test_webhooks_imports_no_feature_app():
    """The apps that emit events (programs, tracking, commissions) import webhooks, never the reverse: its models
    name theirs by string and its payloads are built from the rows the emitters hand it."""
    graph = app_import_graph()
    assert {target: files for target, files in graph["webhooks"].items() if target in FEATURE_APPS} == {}


def _project_files() -> list[Path]:
    """Every module of the project outside tests and migrations: the apps, config, bench, svc_cli, manage.py."""
    packages = [
        top
        for top in sorted(ROOT.iterdir())
        if top.is_dir() and not top.name.startswith(".") and top.name != "tests" and not top.name.endswith(".egg-info")
    ]
    files = [
        path
        for package in packages
        for path in sorted(package.rglob("*.py"))
        if "migrations" not in path.parts and not path.name.startswith("test")
    ]
    return [*files, ROOT / "manage.py"]


def _imported_names(tree: ast.AST) -> set[str]:
    """The modules imported, and each `module.name` of a `from module import name` (which may be a module)."""
    names = _imported_modules(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _is_views_module(module: str) -> bool:
    last = module.split(".")[-1]
    return last == "views" or last.endswith("_views")


def test_only_the_url_configuration_imports_dashboard():
    """The dashboard renders pages and routes; what other surfaces share with it (read models, query and answer
    shapes) lives in the app that owns the data, so nothing but the URL configuration needs the dashboard."""
    importers = sorted(
        str(path.relative_to(ROOT))
        for path in _project_files()
        if path.relative_to(ROOT).parts[0] != "dashboard"
        and any(
            module.split(".")[0] == "dashboard"
            for module in _imported_modules(ast.parse(path.read_text(), filename=str(path)))
        )
    )
    assert [path for path in importers if path != "config/urls.py"] == []


def test_no_app_imports_another_apps_views():
    """Views parse, call one service or selector, and render: what two apps share sits below the views (selectors,
    services, query and answer shapes), never in one app's views module (views, webhook_views, review_views, ...)."""
    found = sorted(
        f"{path.relative_to(ROOT)}: {module}"
        for app in APPS
        for path in _app_files(app)
        for module in _imported_names(ast.parse(path.read_text(), filename=str(path)))
        if module.split(".")[0] in APPS and module.split(".")[0] != app and _is_views_module(module)
    )
    assert found == []
