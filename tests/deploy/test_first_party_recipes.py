"""The first-party proxy recipes in deploy/first-party/, each checked by its own tool with the placeholders filled in:
nginx -t, haproxy -c, caddy validate, apache2 -t; the Next.js files and the Cloudflare Worker by node (the Worker also
run against a local server), vercel.json as JSON. Each forwards /_svc/ with the prefix stripped, sends
X-Forwarded-Prefix: /_svc and leaves Set-Cookie alone. nginx and HAProxy are required in CI (CI=true, .ci/run
installs them); without Caddy, Apache or node the tests that need them skip with a reason. nginx and HAProxy also run
in front of the real server in tests/served/test_first_party_served.py."""

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.first_party_proxies import RECIPES, SERVICE_PLACEHOLDER, nginx_binary, nginx_config
from tests.proxy import haproxy_binary

FORWARDED = ("X-Forwarded-Prefix", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-For")
APACHE_MODULES = Path("/usr/lib/apache2/modules")


def recipe(name: str) -> str:
    return (RECIPES / name).read_text()


def directives(text: str) -> str:
    """The recipe without its comments."""
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60, **kwargs)


def tool(name: str, *paths: str) -> str:
    """An optional validator: its path, or a skip with the reason (these are not required in CI)."""
    found = shutil.which(name) or next((path for path in paths if os.access(path, os.X_OK)), None)
    if not found:
        pytest.skip(f"needs {name} to validate its recipe (apt-get install {name})")
    return found


def test_every_recipe_is_there_and_names_the_prefix():
    for name in ("nginx.conf", "haproxy.cfg", "Caddyfile", "apache.conf", "next.config.js", "middleware.js"):
        assert "/_svc" in recipe(name), name
    for name in ("nginx.conf", "haproxy.cfg", "Caddyfile", "apache.conf", "middleware.js", "worker.js", "vercel.json"):
        assert "X-Forwarded-Prefix" in recipe(name), name


def test_the_nginx_recipe_passes_nginx_t(tmp_path):
    binary = nginx_binary()
    config = nginx_config(tmp_path, port=8080, service_url="http://127.0.0.1:8000", root=tmp_path)
    result = run([binary, "-t", "-p", str(tmp_path), "-c", str(config)])
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr


def test_the_nginx_recipe_sends_the_headers_and_rewrites_no_cookie():
    text = recipe("nginx.conf")
    assert "location /_svc/ {" in text
    # The trailing slash of proxy_pass is what strips the prefix.
    assert f"proxy_pass {SERVICE_PLACEHOLDER}/;" in text
    for line in (
        "proxy_set_header X-Forwarded-Prefix /_svc;",
        "proxy_set_header X-Forwarded-Host $host;",
        "proxy_set_header X-Forwarded-Proto $scheme;",
        "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
    ):
        assert line in text
    assert "cookie" not in directives(text).lower() and "proxy_hide_header" not in text


@pytest.mark.parametrize("service", [{}, {"SVC_PLAIN_HTTP": "1"}], ids=["tls-to-service", "plain-http"])
def test_the_haproxy_recipe_passes_haproxy_c(service):
    binary = haproxy_binary()
    env = {**os.environ, "SHOP_BIND": "127.0.0.1:8080", "SVC_ADDR": "127.0.0.1:8443", "SVC_HOST": "127.0.0.1"}
    result = run([binary, "-c", "-f", str(RECIPES / "haproxy.cfg")], env={**env, **service})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Configuration file is valid" in result.stdout
    assert "WARNING" not in result.stdout + result.stderr and "ALERT" not in result.stdout + result.stderr


def test_the_haproxy_recipe_sends_the_headers_and_rewrites_no_cookie():
    text = recipe("haproxy.cfg")
    assert "use_backend svc if { path_beg /_svc/ }" in text
    for line in (
        "option forwardfor",
        "http-request set-header X-Forwarded-Prefix /_svc",
        "http-request set-header X-Forwarded-Host %[req.hdr(host)]",
        "http-request set-header X-Forwarded-Proto https if { ssl_fc }",
        "http-request set-header X-Forwarded-Proto http if !{ ssl_fc }",
        r"http-request replace-path ^/_svc(/.*)$ \1",
    ):
        assert line in text
    assert "cookie" not in directives(text).lower()


def test_the_caddyfile_passes_caddy_validate(tmp_path):
    binary = tool("caddy", "/usr/bin/caddy")
    config = tmp_path / "Caddyfile"
    text = recipe("Caddyfile")
    assert SERVICE_PLACEHOLDER in text and "shop.example.com {" in text
    config.write_text(text.replace(SERVICE_PLACEHOLDER, "https://127.0.0.1:8443"))
    # Caddy keeps its state under XDG directories: the test's own, not the home directory.
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    result = run([binary, "validate", "--config", str(config), "--adapter", "caddyfile"], env=env)
    assert result.returncode == 0, result.stderr
    assert "Valid configuration" in result.stdout + result.stderr
    assert "header_up X-Forwarded-Prefix /_svc" in text and "handle_path /_svc/* {" in text
    assert "header_up Host {upstream_hostport}" in text  # Caddy passes the shop's Host on by default


def test_the_apache_recipe_passes_apache2_t(tmp_path):
    binary = tool("apache2", "/usr/sbin/apache2")
    modules = ("mpm_event", "authz_core", "proxy", "proxy_http", "headers", "ssl")
    missing = [name for name in modules if not (APACHE_MODULES / f"mod_{name}.so").exists()]
    assert not missing, f"apache2 without the modules the recipe needs: {missing}"
    text = recipe("apache.conf")
    assert SERVICE_PLACEHOLDER in text
    (tmp_path / "svc-first-party.conf").write_text(text.replace(SERVICE_PLACEHOLDER, "https://127.0.0.1:8443"))
    loads = "\n".join(f"LoadModule {name}_module {APACHE_MODULES}/mod_{name}.so" for name in modules)
    server = tmp_path / "httpd.conf"
    server.write_text(
        f"""ServerRoot {tmp_path}
ServerName localhost
Listen 127.0.0.1:8080
PidFile {tmp_path}/httpd.pid
ErrorLog {tmp_path}/error.log
{loads}
Include {tmp_path}/svc-first-party.conf
"""
    )
    result = run([binary, "-t", "-f", str(server)])
    assert result.returncode == 0, result.stderr
    assert "Syntax OK" in result.stderr
    for line in (
        'ProxyPass "https://track.example.com/"',
        'RequestHeader set X-Forwarded-Prefix "/_svc"',
        'RequestHeader set X-Forwarded-Proto "expr=%{REQUEST_SCHEME}"',
        '<Location "/_svc/">',
    ):
        assert line in text
    # mod_proxy_http adds X-Forwarded-For and X-Forwarded-Host itself unless told not to.
    assert "ProxyAddHeaders Off" not in text and "ProxyPreserveHost On" not in text
    assert "cookie" not in directives(text).lower()


def test_vercel_json_routes_the_prefix_and_sets_the_header():
    config = json.loads(recipe("vercel.json"))
    (route,) = config["routes"]
    assert (route["src"], route["dest"]) == ("/_svc/(.*)", "https://track.example.com/$1")
    assert route["transforms"] == [
        {"type": "request.headers", "op": "set", "target": {"key": "X-Forwarded-Prefix"}, "args": "/_svc"}
    ]


def node() -> str:
    return tool("node", "/usr/bin/node")


@pytest.mark.parametrize("name", ["next.config.js", "middleware.js", "worker.js"])
def test_the_javascript_recipes_parse(name, tmp_path):
    # middleware.js and worker.js are ES modules (Next.js and Workers load them so): checked as .mjs.
    path = RECIPES / name
    if name != "next.config.js":
        path = tmp_path / name.replace(".js", ".mjs")
        shutil.copy(RECIPES / name, path)
    result = run([node(), "--check", str(path)])
    assert result.returncode == 0, result.stderr


def test_next_config_rewrites_the_prefix_before_the_shops_own_routes():
    script = "require(process.argv[1]).rewrites().then(r => console.log(JSON.stringify(r)))"
    result = run([node(), "-e", script, str(RECIPES / "next.config.js")], env={**os.environ, "SVC_ORIGIN": ""})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "beforeFiles": [{"source": "/_svc/:path*", "destination": "https://track.example.com/:path*"}]
    }
    middleware = recipe("middleware.js")
    for line in (
        'headers.set("X-Forwarded-Prefix", "/_svc");',
        'headers.set("X-Forwarded-Host", request.nextUrl.host);',
        'headers.set("X-Forwarded-Proto", request.nextUrl.protocol.replace(":", ""));',
        'export const config = { matcher: "/_svc/:path*" };',
    ):
        assert line in middleware


class _EchoHandler(BaseHTTPRequestHandler):
    """The service's stand-in: answers what it was asked, with a Set-Cookie."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        answer = json.dumps({"path": self.path, "headers": dict(self.headers.items()), "body": body}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Set-Cookie", "svc_click_id=c_1; Max-Age=2592000; Path=/; SameSite=Lax")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def echo_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


WORKER_RUN = """
const { default: worker } = await import(process.argv[1]);
const request = new Request("https://shop.example.com/_svc/api/v1/track/click?from=test", {
  method: "POST",
  headers: {
    "Content-Type": "application/json",
    "CF-Connecting-IP": "203.0.113.7",
    "X-Forwarded-For": "198.51.100.66",
    "X-Forwarded-Prefix": "/elsewhere",
  },
  body: '{"affiliate_url": "https://shop.example.com/?aff=summer"}',
});
const response = await worker.fetch(request, { SVC_ORIGIN: process.argv[2] });
const answer = { status: response.status, cookies: response.headers.getSetCookie(), echo: await response.json() };
console.log(JSON.stringify(answer));
"""


def test_the_worker_forwards_without_the_prefix_with_the_headers_and_keeps_set_cookie(tmp_path, echo_server):
    module = tmp_path / "worker.mjs"
    shutil.copy(RECIPES / "worker.js", module)
    result = run([node(), "--input-type=module", "-e", WORKER_RUN, str(module), echo_server])
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["status"] == 200
    assert answer["cookies"] == ["svc_click_id=c_1; Max-Age=2592000; Path=/; SameSite=Lax"]
    echo = answer["echo"]
    assert echo["path"] == "/api/v1/track/click?from=test"
    assert echo["body"] == '{"affiliate_url": "https://shop.example.com/?aff=summer"}'
    headers = {name.lower(): value for name, value in echo["headers"].items()}
    # What the client sent under these names is replaced: the prefix is the Worker's, the address Cloudflare's.
    assert headers["x-forwarded-prefix"] == "/_svc"
    assert headers["x-forwarded-host"] == "shop.example.com"
    assert headers["x-forwarded-proto"] == "https"
    assert headers["x-forwarded-for"] == "203.0.113.7"
    assert headers["host"] == echo_server.removeprefix("http://")


def test_the_docs_show_each_recipes_header_lines_as_the_files_have_them():
    docs = (RECIPES.parents[1] / "docs" / "first-party.md").read_text()
    shown = {
        "nginx.conf": ("proxy_set_header X-Forwarded-", "proxy_pass ", "proxy_ssl_"),
        "haproxy.cfg": ("http-request ", "option forwardfor", "use_backend svc"),
        "Caddyfile": ("header_up ", "handle_path ", "reverse_proxy "),
        "apache.conf": ("RequestHeader ", "ProxyPass", "SSLProxy", "<Location"),
        "middleware.js": ("headers.set(", "export const config"),
        "worker.js": ("headers.set(", "headers.delete(", "if (visitor)", "else headers"),
    }
    for name, starts in shown.items():
        lines = [line.strip() for line in directives(recipe(name)).splitlines()]
        if name.endswith(".js"):
            lines = [line.split("//", 1)[0].strip() for line in recipe(name).splitlines()]
        for line in lines:
            if line.startswith(starts):
                assert line in docs, f"{name}: {line!r} is not in docs/first-party.md"
