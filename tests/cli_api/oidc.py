"""A stand-in OIDC provider: an RSA key, its JWKS served over HTTP on 127.0.0.1, and ID tokens signed with it."""

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from cli_api.tokens import jwks_clients_reset

ISSUER = "https://id.example.test"
AUDIENCE = "svc-cli-client"


@dataclass
class Provider:
    key: Any
    jwks_url: str
    kid: str = "key-1"
    requests: list[str] = field(default_factory=list)

    def id_token(self, *, key: Any = None, kid: str | None = None, **overrides: Any) -> str:
        now = int(time.time())
        claims = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "provider-user-1",
            "email": "ada@example.com",
            "email_verified": True,
            "iat": now,
            "exp": now + 300,
        }
        claims.update(overrides)
        claims = {name: value for name, value in claims.items() if value is not None}
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": kid or self.kid})


def new_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def oidc_provider(settings) -> Iterator[Provider]:
    key = new_key()
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": "key-1", "alg": "RS256", "use": "sig"})
    body = json.dumps({"keys": [jwk]}).encode()
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    settings.OIDC_ISSUER, settings.OIDC_AUDIENCE, settings.OIDC_JWKS_URL = ISSUER, AUDIENCE, url
    jwks_clients_reset()
    try:
        yield Provider(key=key, jwks_url=url, requests=seen)
    finally:
        jwks_clients_reset()
        server.shutdown()
        server.server_close()
