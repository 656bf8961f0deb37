"""The production layout (deploy/compose.yaml, deploy/haproxy.cfg; docs/deploy.md) read for what Docker would only
tell at deploy time: every process is there, the instances share one signing key and trust one proxy hop, every
variable the file sets is one the service reads, and HAProxy accepts its config (with and without TLS).
tests/served/test_two_instances.py runs that same haproxy.cfg in front of two live instances."""

import datetime
import re
import subprocess
from pathlib import Path

import gunicorn.config
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.proxy import HAPROXY_CONFIG, haproxy_binary

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]
WEB = ("app1", "app2")
# Services running the project's image: each reads the project's settings.
PROJECT = tuple(name for name, service in SERVICES.items() if service.get("build", {}).get("dockerfile"))
# `env.str("NAME"`, `env_bool("NAME"`, `os.environ.get("NAME"`, `os.environ["NAME"]`, ...
ENV_READ = re.compile(r'(?:\benv(?:\.\w+|_\w+)\(|environ(?:\.get\(|\[))\s*"([A-Z][A-Z0-9_]*)"')


def variables_the_service_reads() -> set[str]:
    sources = ["settings.py", "env.py", "gunicorn.conf.py", "celery.py"]
    names = {name for source in sources for name in ENV_READ.findall((ROOT / "config" / source).read_text())}
    # gunicorn's own: which addresses may set X-Forwarded-Proto.
    if "FORWARDED_ALLOW_IPS" in Path(gunicorn.config.__file__).read_text():
        names.add("FORWARDED_ALLOW_IPS")
    return names


def test_the_layout_runs_every_process_on_one_image():
    assert set(SERVICES) == {"db", "redis", "migrate", *WEB, "worker", "beat", "proxy"}
    assert set(PROJECT) == {"migrate", *WEB, "worker", "beat"}
    assert (ROOT / SERVICES["app1"]["build"]["dockerfile"]).is_file()
    for name in WEB:
        assert SERVICES[name]["command"][:3] == ["gunicorn", "-c", "config/gunicorn.conf.py"]
        assert "ports" not in SERVICES[name], "instances are reached through the proxy only"
    assert SERVICES["worker"]["command"][:4] == ["celery", "-A", "config", "worker"]
    assert SERVICES["beat"]["command"][:4] == ["celery", "-A", "config", "beat"]
    assert SERVICES["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]


def test_every_process_shares_the_signing_key_and_stores_and_the_instances_have_ids_of_their_own():
    environments = {name: SERVICES[name]["environment"] for name in PROJECT}
    for variable in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "RATELIMIT_SHARED", "ALLOWED_HOSTS"):
        assert len({environment[variable] for environment in environments.values()}) == 1, variable
    assert environments["app1"]["DEBUG"] == "false"
    assert environments["app1"]["SECRET_KEY"].startswith("${SECRET_KEY:?")  # required, never defaulted
    assert {environments[name]["TRUSTED_PROXY_COUNT"] for name in WEB} == {"1"}
    instance_ids = [environments[name]["INSTANCE_ID"] for name in WEB]
    assert len(set(instance_ids)) == len(WEB) and all(instance_ids)


def test_every_variable_the_layout_sets_is_one_the_service_reads():
    read = variables_the_service_reads()
    for name in PROJECT:
        assert set(SERVICES[name]["environment"]) <= read, name
    haproxy_config = HAPROXY_CONFIG.read_text()
    for variable in SERVICES["proxy"]["environment"]:
        assert f"${{{variable}" in haproxy_config or f"defined({variable})" in haproxy_config, variable


def test_the_proxy_balances_over_every_instance_with_health_checks():
    config = HAPROXY_CONFIG.read_text()
    servers = re.findall(r'^\s*server (\S+) "\$\{\w+-([\w.-]+:\d+)\}"', config, re.MULTILINE)
    assert servers == [(name, f"{name}:8000") for name in WEB]
    assert "uri /healthz" in config and "option forwardfor" in config
    assert SERVICES["proxy"]["volumes"][0].startswith("./haproxy.cfg:")


def _self_signed_pem(directory: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "track.example.com")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    pem = certificate.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (directory / "track.example.com.pem").write_bytes(pem)


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_haproxy_accepts_the_config(tls, tmp_path):
    binary = haproxy_binary()
    env = {"HEALTHCHECK_HOST": "track.example.com"}
    if tls:
        _self_signed_pem(tmp_path)
        env["TLS_CERTS"] = f"{tmp_path}/"
    checked = subprocess.run(
        [binary, "-c", "-f", str(HAPROXY_CONFIG)], env=env, capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_worker_and_beat_are_restarted_and_checked_on_their_own():
    for name in ("worker", "beat"):
        assert SERVICES[name]["restart"] == "unless-stopped", name
        assert SERVICES[name]["healthcheck"]["test"][0] == "CMD-SHELL", name
    worker = SERVICES["worker"]
    assert worker["command"][-2:] == ["-Q", "celery,webhooks"], "the worker consumes every queue"
    assert "inspect ping --destination celery@$$HOSTNAME" in worker["healthcheck"]["test"][1]
    beat_schedule = SERVICES["beat"]["command"][SERVICES["beat"]["command"].index("--schedule") + 1]
    assert beat_schedule.startswith("/tmp/celerybeat-schedule")
    assert "-name 'celerybeat-schedule*'" in SERVICES["beat"]["healthcheck"]["test"][1]
    units = {name: (ROOT / "deploy" / "systemd" / f"svc-{name}.service").read_text() for name in ("worker", "beat")}
    for name, unit in units.items():
        assert "\nRestart=always\n" in unit and "\nStartLimitIntervalSec=0\n" in unit, name
        assert f"celery -A config {name} " in unit, name
    assert "-Q celery,webhooks\n" in units["worker"]
