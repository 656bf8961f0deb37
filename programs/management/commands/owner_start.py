import getpass
import json
import os
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from core.errors import BadRequestError
from programs.api.serializers import ProgramCreateInputSerializer
from programs.models import CommissionType
from programs.onboarding import OwnerStarted, OwnerStartRefused, owner_start, owner_user_create, owner_user_find

from .demo import default_base_url


def _first_message(errors: Any) -> str:
    """The first message of a serializer's errors (what the program API would answer)."""
    while isinstance(errors, dict | list):
        errors = next(iter(errors.values())) if isinstance(errors, dict) else errors[0]
    return str(errors)


class Command(BaseCommand):
    help = (
        "Makes an operator the owner of their own program in one step: the user (or an existing one, such as a "
        "superuser), the workspace they own, the program with its live and test keys (shown once) and optionally "
        "a first partner with a referral link. A re-run reports what exists and makes nothing twice."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", required=True, help="The operator's email; an existing user is found by it")
        parser.add_argument(
            "--username", help="Sign-in name: finds an existing user by it, or names a new one (default: the email)"
        )
        parser.add_argument("--program", required=True, metavar="NAME", help="The program's name")
        parser.add_argument("--domain", required=True, help="The shop's domain, e.g. shop.example.com")
        parser.add_argument(
            "--commission-type", default=CommissionType.PERCENT, choices=CommissionType.values, help="Default: percent"
        )
        parser.add_argument(
            "--commission-rate", default="20", help="Percent (at most 100) or an amount in minor units; default 20"
        )
        parser.add_argument("--workspace", metavar="NAME", help="A new workspace's name (default: the program's name)")
        parser.add_argument("--partner", metavar="NAME", help="Also make this partner, enrolled, with a referral link")
        parser.add_argument("--partner-email", default="", help="The partner's email")
        parser.add_argument("--superuser", action="store_true", help="A new user may also use Django admin")
        parser.add_argument(
            "--password-from-env",
            metavar="VAR",
            help="A new user's password is in this environment variable (instead of being asked)",
        )
        parser.add_argument(
            "--no-input",
            "--noinput",
            dest="interactive",
            action="store_false",
            help="Never prompt: a new user then needs --password-from-env",
        )
        parser.add_argument("--json", action="store_true", help="Print one JSON object (for scripts)")
        parser.add_argument(
            "--base-url",
            default=None,
            help="The dashboard's address in the output (default: PUBLIC_BASE_URL, else the address `make run` "
            "serves on)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        email = options["email"].strip()
        if not email:
            raise CommandError("--email must not be empty")
        program_settings = self.program_settings(options)
        try:
            user = owner_user_find(email=email, username=options["username"])
            password = None if user is not None else self.new_password(email, options)
            with transaction.atomic():
                if user is None:
                    assert password is not None
                    user = owner_user_create(
                        email=email, username=options["username"], password=password, superuser=options["superuser"]
                    )
                started = owner_start(
                    user=user,
                    workspace_name=(options["workspace"] or "").strip() or None,
                    program_settings=program_settings,
                    partner_name=(options["partner"] or "").strip() or None,
                    partner_email=options["partner_email"].strip(),
                    user_created=password is not None,
                )
        except OwnerStartRefused as refused:
            raise CommandError(str(refused)) from None
        base = (options["base_url"] or default_base_url()).rstrip("/")
        if options["json"]:
            self.stdout.write(json.dumps(self.as_json(started, base)))
        else:
            self.stdout.write("\n".join(self.summary(started, base)))

    def program_settings(self, options: dict[str, Any]) -> dict[str, Any]:
        """Checked by the rules of the program API (POST /api/v1/cli/init)."""
        serializer = ProgramCreateInputSerializer(
            data={
                "name": options["program"],
                "domain": options["domain"],
                "commission_type": options["commission_type"],
                "commission_rate": options["commission_rate"],
            }
        )
        try:
            valid = serializer.is_valid()
        except BadRequestError as refused:  # the percent rule raises the API's own error
            raise CommandError(refused.message) from None
        if not valid:
            raise CommandError(_first_message(serializer.errors))
        return dict(serializer.validated_data)

    def new_password(self, email: str, options: dict[str, Any]) -> str:
        variable = options["password_from_env"]
        if variable:
            password = os.environ.get(variable, "")
            if not password:
                raise CommandError(f"The environment variable {variable} is not set or empty")
        elif not options["interactive"]:
            raise CommandError(
                f"No user has the email {email} yet, and a new user needs a password: pass --password-from-env VAR "
                "(the variable holding it), or leave out --no-input to be asked"
            )
        else:
            self.stderr.write(f"No user has the email {email} yet: choose their password.")
            password = getpass.getpass()
            if password != getpass.getpass("Password (again): "):
                raise CommandError("The two passwords differ; nothing was made")
        User = get_user_model()
        try:
            validate_password(password, User(username=options["username"] or email, email=email))
        except ValidationError as invalid:
            raise CommandError(" ".join(invalid.messages)) from None
        return password

    def summary(self, started: OwnerStarted, base: str) -> list[str]:
        user, workspace, program = started.user, started.workspace, started.program
        username = user.get_username()
        made = {True: "created", False: "exists"}
        lines = [
            f"User #{user.pk} {username}: {made[started.user_created]}"
            + ("" if started.user_created else " (password unchanged)")
            + (", may use Django admin" if user.is_staff else ""),
            f'Workspace #{workspace.pk} "{workspace.name}": {made[started.workspace_created]}, owned by {username}',
            f'Program #{program.pk} "{program.name}" ({program.domain}): {made[started.program_created]}',
        ]
        if started.program_created:
            lines += [
                "  Its keys, shown only now (only their SHA-256 digests are stored); copy them:",
                f"  live key  {started.api_key}",
                f"  test key  {started.test_api_key}  (test mode: nothing counts)",
            ]
        else:
            lines.append(
                "  Its keys were shown when it was made and are never shown again; if lost, regenerate one on "
                f"{base}/programs/{program.pk}/key"
            )
        if started.partner is not None and started.link is not None:
            lines += [
                f'Partner #{started.partner.pk} "{started.partner.name}": {made[started.partner_created]}, '
                "enrolled in the program",
                f"Referral link {started.link.short_link}: {made[started.link_created]}; a visit to "
                f"https://{program.domain}/?aff={started.link.short_link} is a click for the partner",
            ]
        lines += [
            "",
            f"Sign in: {base}{settings.LOGIN_URL} as {username}",
            f"Your program: {base}/programs/{program.pk}/ (tabs: Readiness, Commissions, API key)",
        ]
        if started.link is None:
            lines += [
                "Next: a partner and their referral link. Run this again with --partner NAME, or add them in "
                f"admin ({base}/admin/: Partners, Partner programs, Referral links).",
            ]
        elif started.api_key is not None:
            lines += [
                "",
                "Try a click and a sale (the sale's commission then shows on the Commissions page):",
                f"  curl -s -X POST {base}/api/v1/track/click -H 'Content-Type: application/json' \\",
                f'    -d \'{{"affiliate_url": "https://{program.domain}/?aff={started.link.short_link}"}}\'',
                f"  curl -s -X POST {base}/api/v1/track/sale -H 'Authorization: Bearer {started.api_key}' \\",
                "    -H 'Content-Type: application/json' \\",
                '    -d \'{"transaction_id": "txn-1", "amount_cents": 4900, "click_id": "<click_id>"}\'',
            ]
        return lines

    def as_json(self, started: OwnerStarted, base: str) -> dict[str, Any]:
        program = started.program
        keys = {"api_key": started.api_key, "test_api_key": started.test_api_key} if started.program_created else {}
        return {
            "user": {
                "id": started.user.pk,
                "username": started.user.get_username(),
                "created": started.user_created,
            },
            "workspace": {
                "id": started.workspace.pk,
                "name": started.workspace.name,
                "created": started.workspace_created,
            },
            "program": {
                "id": program.pk,
                "name": program.name,
                "domain": program.domain,
                "created": started.program_created,
                **keys,
            },
            "partner": None
            if started.partner is None
            else {"id": started.partner.pk, "name": started.partner.name, "created": started.partner_created},
            "link": None
            if started.link is None
            else {"id": started.link.pk, "short_link": started.link.short_link, "created": started.link_created},
            "dashboard": {
                "sign_in": f"{base}{settings.LOGIN_URL}",
                "program": f"{base}/programs/{program.pk}/",
            },
        }
