"""The shop's reverse proxy in front of the service, from the first-party recipes in deploy/first-party/ themselves:
nginx (nginx.conf, included in a server block written here, with the service's address filled in) and HAProxy
(haproxy.cfg, run unchanged with its environment variables pointing at the test server). Both answer the service
under /_svc/ of their own origin; nginx also serves a directory of the shop's pages.
Without nginx or haproxy the tests skip with a reason, except in CI (CI=true), where they fail; .ci/run installs
both. Over TLS too, with a self-signed certificate (self_signed_certificate), for the scheme the proxy forwards."""

import datetime
import ipaddress
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.gunicorn import BASE_DIR, free_port
from tests.proxy import haproxy_binary

RECIPES = BASE_DIR / "deploy" / "first-party"
PREFIX = "/_svc"
# What each recipe names the service by; a test puts its server's address there.
SERVICE_PLACEHOLDER = "https://track.example.com"
BOOT_SECONDS = 15


@dataclass
class ShopProxy:
    """The shop's origin as its proxy serves it: plain HTTP, and HTTPS when it was given a certificate."""

    url: str
    tls_url: str | None = None


def self_signed_certificate(directory: Path) -> Path:
    """A certificate for localhost, 127.0.0.1 and *.example.com with its key, in one PEM file (HAProxy reads that;
    nginx takes it as both certificate and key). Clients of the tests do not verify it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.DNSName("localhost"), x509.DNSName("*.example.com"), x509.DNSName("example.com")]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([*names, x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    pem = directory / "shop.pem"
    pem.write_bytes(
        certificate.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return pem


def nginx_binary() -> str:
    """The nginx executable; skips the test without one, or fails it in CI."""
    found = shutil.which("nginx") or next(
        (path for path in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(path, os.X_OK)), None
    )
    if found:
        return found
    missing = "needs nginx (apt-get install nginx; .ci/run installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {missing}", pytrace=False)
    pytest.skip(missing)


def nginx_config(
    directory: Path,
    *,
    port: int,
    service_url: str,
    root: Path | None = None,
    tls_port: int | None = None,
    certificate: Path | None = None,
) -> Path:
    """A whole nginx configuration in `directory`: one server on 127.0.0.1:`port` (and on `tls_port` over TLS with
    `certificate`) that includes the recipe (the service's address filled in) and serves `root`, if given, as the
    shop's pages. Everything nginx writes stays in `directory`."""
    recipe = (RECIPES / "nginx.conf").read_text()
    assert SERVICE_PLACEHOLDER in recipe
    snippet = directory / "svc-first-party.conf"
    snippet.write_text(recipe.replace(SERVICE_PLACEHOLDER, service_url.rstrip("/")))
    temp = directory / "temp"
    temp.mkdir(exist_ok=True)
    # As root, nginx's workers would switch to an unprivileged user that cannot read the test's directories.
    user = "user root;\n" if os.geteuid() == 0 else ""
    pages = f"root {root};" if root else "return 404;"
    tls = ""
    if tls_port and certificate:
        tls = f"listen 127.0.0.1:{tls_port} ssl; ssl_certificate {certificate}; ssl_certificate_key {certificate};"
    config = directory / "nginx.conf"
    config.write_text(
        f"""{user}worker_processes 1;
pid {directory / "nginx.pid"};
error_log {directory / "error.log"} info;
events {{ worker_connections 256; }}
http {{
    access_log {directory / "access.log"};
    client_body_temp_path {temp / "body"};
    proxy_temp_path {temp / "proxy"};
    fastcgi_temp_path {temp / "fastcgi"};
    uwsgi_temp_path {temp / "uwsgi"};
    scgi_temp_path {temp / "scgi"};
    types {{ text/html html; application/javascript js; }}
    server {{
        listen 127.0.0.1:{port};
        {tls}
        server_name localhost;
        include {snippet};
        location / {{ {pages} }}
    }}
}}
"""
    )
    return config


@contextmanager
def nginx_serving(
    directory: Path, *, service_url: str, root: Path | None = None, tls: bool = False
) -> Iterator[ShopProxy]:
    """Yields the shop's origin (http://localhost:<port>, and https://localhost:<port> with `tls`) once the
    service's /healthz answers through it."""
    binary = nginx_binary()
    port = free_port()
    tls_port = free_port() if tls else None
    certificate = self_signed_certificate(directory) if tls else None
    config = nginx_config(
        directory, port=port, service_url=service_url, root=root, tls_port=tls_port, certificate=certificate
    )
    log = directory / "error.log"
    with (directory / "nginx.out").open("w") as output:
        # daemon off: the process we start is the master we stop.
        proxy = subprocess.Popen(
            [binary, "-p", str(directory), "-c", str(config), "-g", "daemon off;"],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_until_up(proxy, f"http://127.0.0.1:{port}", directory / "nginx.out", log)
        yield ShopProxy(f"http://localhost:{port}", f"https://localhost:{tls_port}" if tls_port else None)
    finally:
        proxy.send_signal(signal.SIGQUIT)  # graceful: finish the requests in flight, then exit
        _stopped(proxy)


@contextmanager
def haproxy_first_party_serving(directory: Path, *, service_url: str, tls: bool = False) -> Iterator[ShopProxy]:
    """Yields the shop's origin once the service's /healthz answers through HAProxy running the recipe (over TLS
    too with `tls`: the recipe's SHOP_CERTS)."""
    binary = haproxy_binary()
    port = free_port()
    tls_port = free_port() if tls else None
    service = urlsplit(service_url)
    env = {
        **os.environ,
        "SHOP_BIND": f"127.0.0.1:{port}",
        "SVC_ADDR": service.netloc,
        "SVC_HOST": service.hostname or "",
        "SVC_PLAIN_HTTP": "1",
    }
    if tls_port:
        certificates = directory / "certs"
        certificates.mkdir()
        self_signed_certificate(certificates)
        env.update(SHOP_CERTS=str(certificates), SHOP_TLS_BIND=f"127.0.0.1:{tls_port}")
    log = directory / "haproxy.log"
    with log.open("w") as output:
        proxy = subprocess.Popen(
            [binary, "-db", "-f", str(RECIPES / "haproxy.cfg")], env=env, stdout=output, stderr=subprocess.STDOUT
        )
    try:
        _wait_until_up(proxy, f"http://127.0.0.1:{port}", log, log)
        yield ShopProxy(f"http://localhost:{port}", f"https://localhost:{tls_port}" if tls_port else None)
    finally:
        proxy.send_signal(signal.SIGUSR1)  # soft stop
        _stopped(proxy)


def _wait_until_up(proxy: subprocess.Popen[bytes], url: str, output: Path, log: Path) -> None:
    deadline = time.monotonic() + BOOT_SECONDS
    while time.monotonic() < deadline:
        if proxy.poll() is not None:
            pytest.fail(f"the proxy exited with {proxy.returncode}:\n{output.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}{PREFIX}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    pytest.fail(f"the proxy did not answer within {BOOT_SECONDS} s:\n{log.read_text()[-3000:]}")


def _stopped(proxy: subprocess.Popen[bytes]) -> None:
    try:
        proxy.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proxy.kill()
        proxy.wait()
