import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from programs.keys import key_digest
from programs.models import AgentKey
from programs.services import agent_key_create, agent_key_revoke
from tests.factories import ProgramFactory, WorkspaceFactory

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("agent_key", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_issue_prints_only_the_key_on_stdout_and_stores_only_its_hash():
    workspace = WorkspaceFactory()
    out, err = run(
        "issue",
        "--workspace",
        str(workspace.pk),
        "--name",
        "billing bot",
        "--scope",
        "commissions:write",
        "--scope",
        "programs:read",
    )
    raw = out.strip()
    assert out == raw + "\n" and raw.startswith("agt_")
    key = AgentKey.objects.get()
    assert key.digest == key_digest(raw) and key.name == "billing bot" and key.workspace == workspace
    assert key.scopes == ["programs:read", "commissions:write"]
    assert not key.programs.exists() and key.expires_at is None
    assert raw not in err and key.masked in err and "shown only once" in err and "programs all" in err


def test_issue_limits_to_programs_with_an_expiry_and_json():
    program = ProgramFactory()
    out, _ = run(
        "issue",
        "--workspace",
        str(program.workspace.pk),
        "--name",
        "links bot",
        "--scope",
        "links:write",
        "--program",
        str(program.pk),
        "--expires-in-days",
        "30",
        "--json",
    )
    data = json.loads(out)
    key = AgentKey.objects.get()
    assert data["id"] == key.pk and key_digest(data["key"]) == key.digest and data["masked"] == key.masked
    assert data["scopes"] == ["links:write"] and data["programs"] == [program.pk]
    assert list(key.programs.all()) == [program]
    assert key.expires_at is not None
    assert abs(key.expires_at - (timezone.now() + timedelta(days=30))) < timedelta(minutes=1)
    assert data["expires_at"] == key.expires_at.isoformat()


def test_issue_takes_an_absolute_expiry():
    workspace = WorkspaceFactory()
    out, _ = run(
        "issue",
        "--workspace",
        str(workspace.pk),
        "--name",
        "n",
        "--scope",
        "events:read",
        "--expires-at",
        "2031-06-01T00:00:00Z",
        "--json",
    )
    assert json.loads(out)["expires_at"] == "2031-06-01T00:00:00+00:00"
    assert AgentKey.objects.get().expires_at.isoformat() == "2031-06-01T00:00:00+00:00"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--scope", "tracking:read"], "Unknown scope(s): tracking:read"),
        (["--scope", "programs:read", "--program", "999999"], "Program(s) 999999 do not exist"),
        (["--scope", "programs:read", "--expires-in-days", "0"], "--expires-in-days must be at least 1"),
        (["--scope", "programs:read", "--expires-at", "soon"], "--expires-at must be ISO 8601"),
        (["--scope", "programs:read", "--expires-at", "2031-01-01T00:00:00"], "needs a UTC offset"),
        (["--scope", "programs:read", "--expires-at", "2020-01-01T00:00:00Z"], "in the past"),
    ],
)
def test_issue_refuses_bad_input_and_creates_nothing(extra, message):
    workspace = WorkspaceFactory()
    with pytest.raises(CommandError) as raised:
        run("issue", "--workspace", str(workspace.pk), "--name", "n", *extra)
    assert message in str(raised.value)
    assert not AgentKey.objects.exists()


def test_issue_refuses_an_unknown_workspace():
    with pytest.raises(CommandError, match="Workspace 999999 does not exist"):
        run("issue", "--workspace", "999999", "--name", "n", "--scope", "programs:read")
    assert not AgentKey.objects.exists()


def test_issue_refuses_a_program_of_another_workspace():
    workspace, foreign = WorkspaceFactory(), ProgramFactory()
    with pytest.raises(CommandError) as raised:
        run(
            "issue",
            "--workspace",
            str(workspace.pk),
            "--name",
            "n",
            "--scope",
            "programs:read",
            "--program",
            str(foreign.pk),
        )
    assert str(raised.value) == f"Program(s) {foreign.pk} are not in workspace {workspace.pk}"
    assert not AgentKey.objects.exists()


def test_issue_needs_a_scope():
    workspace = WorkspaceFactory()
    with pytest.raises(CommandError, match="--scope"):
        run("issue", "--workspace", str(workspace.pk), "--name", "n")


def test_revoke_revokes_once_and_says_when_it_already_was():
    key, _ = agent_key_create(workspace=WorkspaceFactory(), name="n", scopes=["programs:read"])
    out, _ = run("revoke", str(key.pk))
    assert out == f"Revoked agent key {key.pk} ({key.masked}).\n"
    key.refresh_from_db()
    first = key.revoked_at
    assert first is not None
    out, _ = run("revoke", str(key.pk))
    assert "already revoked" in out and first.isoformat() in out
    key.refresh_from_db()
    assert key.revoked_at == first


def test_revoke_refuses_an_unknown_key():
    with pytest.raises(CommandError, match="Agent key 999999 does not exist"):
        run("revoke", "999999")


def test_list_shows_one_line_per_key_without_secrets():
    program = ProgramFactory()
    workspace = program.workspace
    limited, raw_limited = agent_key_create(
        workspace=workspace, name="limited", scopes=["links:read"], programs=[program]
    )
    gone, raw_gone = agent_key_create(workspace=workspace, name="gone", scopes=["payouts:write"])
    agent_key_revoke(key=gone)
    other, _ = agent_key_create(workspace=WorkspaceFactory(), name="other", scopes=["programs:read"])
    out, _ = run("list")
    header, *lines = out.splitlines()
    assert header.split("\t")[:4] == ["id", "name", "workspace", "masked"]
    assert [line.split("\t")[0] for line in lines] == [str(limited.pk), str(gone.pk), str(other.pk)]
    assert lines[0].split("\t") == [
        str(limited.pk),
        "limited",
        str(workspace.pk),
        limited.masked,
        "links:read",
        str(program.pk),
        "never",
        "never",
        "-",
    ]
    gone.refresh_from_db()
    assert lines[1].split("\t")[5] == "all" and lines[1].split("\t")[8] == gone.revoked_at.isoformat()
    for secret in (raw_limited, raw_gone, limited.digest, gone.digest):
        assert secret not in out
    out, _ = run("list", "--workspace", str(workspace.pk))
    assert len(out.splitlines()) == 3 and "other" not in out


def test_list_refuses_an_unknown_workspace():
    with pytest.raises(CommandError, match="Workspace 999999 does not exist"):
        run("list", "--workspace", "999999")
