"""A fresh, self-contained demo set. Every call makes new names and codes, so it can run many times
against one database (benchmarks and end-to-end tests each take their own)."""

import secrets
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from .keys import generate_key
from .models import LeadAuth, Membership, Partner, PartnerProgram, Program, ReferralLink, Role, Workspace
from .services import CreatedProgram, program_create, program_key_install


def _link(code: str, partner: Partner, program: Program, *, active: bool = True) -> str:
    PartnerProgram.objects.get_or_create(partner=partner, program=program)
    ReferralLink.objects.create(short_link=code, partner=partner, program=program, is_active=active)
    return code


@transaction.atomic
def demo_create() -> dict[str, Any]:
    tag = secrets.token_hex(4)
    workspace = Workspace.objects.create(name=f"Demo workspace {tag}")
    User = get_user_model()
    users: dict[str, dict[str, str]] = {}
    for label, role in (("owner", Role.OWNER), ("member", Role.MEMBER), ("outsider", None)):
        username = f"demo-{label}-{tag}"
        password = secrets.token_urlsafe(12)
        user = User.objects.create_user(username=username, password=password, email=f"{username}@example.com")
        if role is not None:
            Membership.objects.create(workspace=workspace, user=user, role=role)
        users[label] = {"username": username, "password": password}

    def make(name: str, **fields: Any) -> CreatedProgram:
        return program_create(
            workspace=workspace,
            name=f"{name} {tag}",
            domain=f"{name.lower()}-{tag}.example.com",
            commission_type=fields.pop("commission_type", "percent"),
            commission_rate=Decimal(fields.pop("commission_rate", 20)),
            **fields,
        )

    main = make("Main", commission_rate=20, cookie_duration=30, hold_days=30)
    instant = make("Instant", commission_rate=10, hold_days=0)
    strict = make("Strict", lead_auth=LeadAuth.SERVER_REQUIRED)
    legacy = make("Legacy")
    # Keys from before the aff_ prefix existed: plain random text, still matched exactly.
    legacy_key = generate_key("")
    program_key_install(program=legacy.program, raw_key=legacy_key)

    partner = Partner.objects.create(
        workspace=workspace, name=f"Demo partner {tag}", email=f"partner-{tag}@example.com"
    )
    second = Partner.objects.create(
        workspace=workspace, name=f"Second partner {tag}", email=f"second-{tag}@example.com"
    )
    links = {
        "main": _link(f"main-{tag}", partner, main.program),
        "main_second_partner": _link(f"main2-{tag}", second, main.program),
        "main_inactive": _link(f"off-{tag}", partner, main.program, active=False),
        "instant": _link(f"instant-{tag}", partner, instant.program),
        "strict": _link(f"strict-{tag}", partner, strict.program),
        "legacy": _link(f"legacy-{tag}", partner, legacy.program),
    }
    return {
        "workspace_id": workspace.pk,
        "programs": {
            "main": {
                "id": main.program.pk,
                "api_key": main.api_key,
                "test_api_key": main.test_api_key,
                "cookie_window_days": main.program.cookie_window_days,
                "commission_type": main.program.commission_type,
                "commission_rate": int(main.program.commission_rate),
                "hold_days": main.program.hold_days,
            },
            "instant": {
                "id": instant.program.pk,
                "api_key": instant.api_key,
                "test_api_key": instant.test_api_key,
                "commission_type": instant.program.commission_type,
                "commission_rate": int(instant.program.commission_rate),
                "hold_days": instant.program.hold_days,
            },
            "strict": {
                "id": strict.program.pk,
                "api_key": strict.api_key,
                "test_api_key": strict.test_api_key,
                "lead_auth": strict.program.lead_auth,
            },
            "legacy": {"id": legacy.program.pk, "api_key": legacy_key},
        },
        "links": links,
        "users": users,
    }
