"""Real headless Chromium for the tracker's browser tests: Debian's /usr/bin/chromium driven by Playwright (the
pip package only; nothing here downloads a browser). Without Chromium the tests skip with a reason, except in CI
(CI=true), where a missing browser fails them.

The service runs in pytest-django's live server on 127.0.0.1; the integrator's page is served by a second server
on localhost, so every tracker call is cross-origin, as on a real site. The page may reach those two servers only."""

import functools
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAGE_HOST = "localhost"
LIVE_SERVER_HOST = "127.0.0.1"


def _browser_missing() -> str | None:
    if not CHROMIUM.exists():
        return f"needs Debian's Chromium at {CHROMIUM} (apt-get install chromium; .ci/run installs it)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "needs the playwright package (pip install -e '.[dev]'); never `playwright install`"
    return None


def _require_browser() -> None:
    missing = _browser_missing()
    if missing is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {missing}", pytrace=False)
    pytest.skip(missing)


@pytest.fixture(autouse=True)
def _browser_marked(request):
    # Any test marked `browser`, whether or not it asks for the `chromium` fixture (which checks too).
    if request.node.get_closest_marker("browser") is not None:
        _require_browser()


@pytest.fixture(scope="session")
def live_server(django_db_setup, django_db_blocker):
    """pytest-django's live server, pinned to 127.0.0.1 so the page's host (localhost) is another origin."""
    from pytest_django.live_server_helper import LiveServer

    with django_db_blocker.unblock():
        server = LiveServer(LIVE_SERVER_HOST)
    yield server
    server.stop()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class PageServer:
    root: Path
    url: str

    def page(self, name: str, html: str) -> str:
        """Writes an HTML page and answers its address."""
        (self.root / name).write_text(html, encoding="utf-8")
        return f"{self.url}/{name}"


@pytest.fixture(scope="module")
def page_server(tmp_path_factory) -> Iterator[PageServer]:
    root = tmp_path_factory.mktemp("site")
    server = ThreadingHTTPServer((PAGE_HOST, 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield PageServer(root=root, url=f"http://{PAGE_HOST}:{server.server_address[1]}")
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def chromium():
    _require_browser()
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop running on this thread, and Django refuses ORM calls while
    # one runs. The calls here are plain synchronous test code, so the guard is lifted while the browser lives
    # (the database flush after each test happens then too).
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        playwright = sync_playwright().start()
        try:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            yield browser
            browser.close()
        finally:
            playwright.stop()


@dataclass
class Tab:
    """A fresh browser profile (no cookies, no sessionStorage) with one page."""

    page: Any
    context: Any
    blocked: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@pytest.fixture
def tab(chromium, live_server, page_server) -> Iterator[Tab]:
    allowed = {urlsplit(live_server.url).netloc, urlsplit(page_server.url).netloc}
    context = chromium.new_context()
    tab = Tab(page=None, context=context)

    def only_local(route) -> None:
        # Nothing may reach the network: any host but the two local servers is refused and noted.
        if urlsplit(route.request.url).netloc in allowed:
            route.continue_()
        else:
            tab.blocked.append(route.request.url)
            route.abort()

    context.route("**/*", only_local)
    tab.page = context.new_page()
    # Generous: a loaded 2-core CI machine runs the server, PostgreSQL and Chromium at once.
    tab.page.set_default_timeout(15_000)
    tab.page.on("request", lambda request: tab.requests.append(f"{request.method} {request.url}"))
    tab.page.on("pageerror", lambda error: tab.errors.append(str(error)))
    yield tab
    context.close()
    assert tab.errors == [], "the tracker threw in the page"
