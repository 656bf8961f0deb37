import json
from datetime import datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from programs.models import AGENT_SCOPES, AgentKey, Program, Workspace
from programs.services import AgentKeyInvalid, agent_key_create, agent_key_revoke


def _when(value: datetime | None, empty: str) -> str:
    return value.isoformat() if value is not None else empty


class Command(BaseCommand):
    help = (
        "Issues, revokes and lists agent API keys. `issue` prints only the raw key on stdout (shown once), "
        "so KEY=$(manage.py agent_key issue ...) works; the summary goes to stderr."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="{issue,revoke,list}")

        issue = actions.add_parser("issue", help="Issue a key; prints it once")
        issue.add_argument("--workspace", type=int, required=True, metavar="ID", help="Workspace id")
        issue.add_argument("--name", required=True)
        issue.add_argument(
            "--scope",
            dest="scopes",
            metavar="SCOPE",
            action="append",
            required=True,
            help=f"Repeat for each scope; write includes read. One of: {', '.join(AGENT_SCOPES)}",
        )
        issue.add_argument(
            "--program",
            dest="programs",
            metavar="ID",
            type=int,
            action="append",
            default=[],
            help="Limit the key to this program (repeatable); none means every program of the workspace",
        )
        expiry = issue.add_mutually_exclusive_group()
        expiry.add_argument("--expires-in-days", type=int, metavar="N", help="Expire N days from now")
        expiry.add_argument("--expires-at", metavar="ISO", help="ISO 8601 with offset, e.g. 2026-12-31T00:00:00Z")
        issue.add_argument(
            "--json", dest="as_json", action="store_true", help="Print a JSON object instead of the bare key"
        )

        revoke = actions.add_parser("revoke", help="Revoke a key from now on")
        revoke.add_argument("key_id", type=int, metavar="ID")

        listing = actions.add_parser("list", help="List keys (never the raw key)")
        listing.add_argument("--workspace", type=int, metavar="ID", help="Only this workspace's keys")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "issue":
            self.issue_key(**options)
        elif action == "revoke":
            self.revoke_key(options["key_id"])
        else:
            self.list_keys(options.get("workspace"))

    def issue_key(
        self,
        *,
        workspace: int,
        name: str,
        scopes: list[str],
        programs: list[int],
        expires_in_days: int | None,
        expires_at: str | None,
        as_json: bool,
        **_: Any,
    ) -> None:
        owner = Workspace.objects.filter(pk=workspace).first()
        if owner is None:
            raise CommandError(f"Workspace {workspace} does not exist")
        found = list(Program.objects.filter(pk__in=programs))
        missing = sorted(set(programs) - {program.pk for program in found})
        if missing:
            raise CommandError(f"Program(s) {', '.join(map(str, missing))} do not exist")
        try:
            key, raw = agent_key_create(
                workspace=owner,
                name=name,
                scopes=scopes,
                programs=found,
                expires_at=self.expiry(expires_in_days, expires_at),
            )
        except AgentKeyInvalid as error:
            raise CommandError(str(error)) from None
        program_ids = sorted(program.pk for program in found)
        if as_json:
            self.stdout.write(
                json.dumps(
                    {
                        "id": key.pk,
                        "key": raw,
                        "masked": key.masked,
                        "name": key.name,
                        "workspace": owner.pk,
                        "scopes": key.scopes,
                        "programs": program_ids,
                        "expires_at": key.expires_at.isoformat() if key.expires_at else None,
                    }
                )
            )
        else:
            self.stdout.write(raw)
        self.stderr.write(
            f"Issued agent key {key.pk} {key.name!r} ({key.masked}) for workspace {owner.pk}: "
            f"scopes {', '.join(key.scopes)}; programs {', '.join(map(str, program_ids)) or 'all'}; "
            f"expires {_when(key.expires_at, 'never')}. The key is shown only once."
        )

    def expiry(self, in_days: int | None, at: str | None) -> datetime | None:
        if in_days is not None:
            if in_days < 1:
                raise CommandError("--expires-in-days must be at least 1")
            return timezone.now() + timedelta(days=in_days)
        if at is None:
            return None
        try:
            when = datetime.fromisoformat(at.replace("Z", "+00:00"))
        except ValueError:
            raise CommandError(f"--expires-at must be ISO 8601, got {at!r}") from None
        if timezone.is_naive(when):
            raise CommandError("--expires-at needs a UTC offset, e.g. 2026-12-31T00:00:00+00:00")
        if when <= timezone.now():
            raise CommandError("--expires-at is in the past")
        return when

    def revoke_key(self, key_id: int) -> None:
        key = AgentKey.objects.filter(pk=key_id).first()
        if key is None:
            raise CommandError(f"Agent key {key_id} does not exist")
        if agent_key_revoke(key=key):
            self.stdout.write(f"Revoked agent key {key.pk} ({key.masked}).")
        else:
            self.stdout.write(f"Agent key {key.pk} ({key.masked}) was already revoked at {_when(key.revoked_at, '')}.")

    def list_keys(self, workspace: int | None) -> None:
        keys = AgentKey.objects.order_by("pk").prefetch_related("programs")
        if workspace is not None:
            if not Workspace.objects.filter(pk=workspace).exists():
                raise CommandError(f"Workspace {workspace} does not exist")
            keys = keys.filter(workspace_id=workspace)
        self.stdout.write("id\tname\tworkspace\tmasked\tscopes\tprograms\texpires\tlast used\trevoked")
        for key in keys:
            program_ids = sorted(program.pk for program in key.programs.all())
            self.stdout.write(
                "\t".join(
                    [
                        str(key.pk),
                        key.name,
                        str(key.workspace_id) if key.workspace_id is not None else "-",
                        key.masked,
                        ",".join(key.scopes),
                        ",".join(map(str, program_ids)) or "all",
                        _when(key.expires_at, "never"),
                        _when(key.last_used_at, "never"),
                        _when(key.revoked_at, "-"),
                    ]
                )
            )
