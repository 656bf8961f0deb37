"""`svc`: from nothing to a verified program from the terminal.

    svc login                   sign in through the browser; the login token is saved (0600)
    svc init                    create a program (flags, or prompts); prints its API keys once
    svc programs                list your programs
    svc status --api-key KEY    the program's integration health
    svc test-event --api-key KEY
                                run a synthetic click, lead and sale
    svc logs --api-key KEY      the program's latest API calls (--follow, --status 4xx, --route, --limit)
    svc explain TXN --api-key KEY
                                why a sale (or, with --click-id/--customer-key, a customer) was credited
    svc listen --forward-to URL receive the program's webhook events live and forward them, signed, to a local app
    svc trigger sale.created    send a synthetic test-mode event (svc listen forwards it)
    svc logout                  revoke the login token and delete it
    svc mcp                     a Model Context Protocol server on stdio over the agent API (SVC_AGENT_KEY)

Every command takes --base-url (or SVC_BASE_URL) and --json. Exit codes: see svc_cli/client.py and docs/cli.md."""

import base64
import json
import os
import secrets
import time
import webbrowser
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from standardwebhooks.webhooks import Webhook

from . import __version__
from .client import (
    AUTH,
    DEFAULT_BASE_URL,
    NETWORK,
    RATE_LIMITED,
    USAGE,
    VERIFICATION_FAILED,
    Api,
    CliFailure,
)
from .config import credentials_delete, credentials_load, credentials_save
from .money import money

app = typer.Typer(
    name="svc",
    help="Command-line helper of the svc tracking service: login, init, programs, status, test-event, logs, explain, "
    "listen, trigger, mcp.",
    no_args_is_help=True,
    add_completion=False,
)

BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        envvar="SVC_BASE_URL",
        help=f"Service address. Default: the saved login's, else {DEFAULT_BASE_URL}.",
        show_default=False,
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout ({'data': …} or {'error': …}).")
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option("--api-key", envvar="SVC_API_KEY", help="Program API key (aff_… or aff_test_…).", show_default=False),
]

ProgramOption = Annotated[
    int | None,
    typer.Option(
        "--program",
        envvar="SVC_PROGRAM",
        help="Program id (see `svc programs`). Default: your only program.",
        show_default=False,
    ),
]

CHECK_ICONS = {"pass": "[green]✓[/green]", "warn": "[yellow]![/yellow]", "fail": "[red]✗[/red]"}


@dataclass
class Globals:
    base_url: str | None = None
    json: bool = False


class Output:
    """Human output on stdout, errors and notes on stderr; with --json, exactly one JSON document on stdout."""

    def __init__(self, json_mode: bool) -> None:
        self.json = json_mode
        self.out = Console(highlight=False, soft_wrap=True)
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)

    def document(self, payload: dict[str, Any]) -> None:
        typer.echo(json.dumps(payload, indent=2))

    def note(self, text: str) -> None:
        """Something a person must see even under --json (the login link)."""
        (self.err if self.json else self.out).print(text)

    def say(self, text: str) -> None:
        if not self.json:
            self.out.print(text)

    def warnings(self, body: dict[str, Any]) -> None:
        for warning in body.get("warnings") or []:
            if isinstance(warning, dict):
                hint = f" {warning['hint']}" if warning.get("hint") else ""
                self.err.print(f"[yellow]Warning:[/yellow] {escape(str(warning.get('message', '')))}{escape(hint)}")

    def spinner(self, text: str) -> AbstractContextManager[Any]:
        return nullcontext() if self.json else self.err.status(text)

    def failure(self, failure: CliFailure) -> None:
        if self.json:
            self.document(failure.as_json())
            return
        self.err.print(f"[red]Error:[/red] {escape(failure.message)}")
        facts = []
        if failure.status is not None:
            facts.append(f"HTTP {failure.status}")
        if failure.code:
            facts.append(f"code {failure.code}")
        if failure.request_id:
            facts.append(f"request id {failure.request_id}")
        if facts:
            self.err.print(escape(" · ".join(facts)))
        if failure.exit_code == RATE_LIMITED and failure.retry_after_seconds is not None:
            self.err.print(f"Retry after {failure.retry_after_seconds} seconds.")
        if failure.exit_code == AUTH and failure.status == 401:
            self.err.print("Run `svc login` to sign in again.")


@contextmanager
def reporting(output: Output) -> Iterator[None]:
    try:
        yield
    except CliFailure as failure:
        output.failure(failure)
        raise typer.Exit(failure.exit_code) from None


def _version(value: bool) -> None:
    if value:
        typer.echo(f"svc {__version__}")
        raise typer.Exit(0)


@app.callback()
def main(
    ctx: typer.Context,
    base_url: BaseUrlOption = None,
    json_output: JsonOption = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    ctx.obj = Globals(base_url=base_url, json=json_output)


def _setup(ctx: typer.Context, base_url: str | None, json_output: bool) -> tuple[Output, str | None]:
    """Options may come before the command (svc --json status) or after it (svc status --json)."""
    globals_ = ctx.obj if isinstance(ctx.obj, Globals) else Globals()
    return Output(json_output or globals_.json), (base_url or globals_.base_url or None)


def _resolve_base_url(explicit: str | None, saved: dict[str, Any] | None) -> str:
    if explicit:
        return explicit.rstrip("/")
    if saved:
        saved_url: str = saved["base_url"]
        return saved_url
    return DEFAULT_BASE_URL


def _parse_time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def _time_text(value: Any, *, zone: bool = True) -> str:
    """A time from the service as the dashboard shows times: "2026-01-31 14:05:09 UTC" (to the second, in UTC;
    `zone=False` under a "(UTC)" heading). Empty: "?"; not a time: as it came."""
    if not value:
        return "?"
    parsed = _parse_time(value)
    if parsed is None:
        return str(value)
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC)
    return f"{parsed:%Y-%m-%d %H:%M:%S}" + (" UTC" if zone else "")


def _logged_in(explicit_base_url: str | None) -> tuple[Api, dict[str, Any]]:
    saved = credentials_load()
    base_url = _resolve_base_url(explicit_base_url, saved)
    if saved is None:
        raise CliFailure("Not logged in. Run `svc login` first.", exit_code=AUTH)
    if saved["base_url"] != base_url:
        raise CliFailure(
            f"Not logged in to {base_url} (the saved login is for {saved['base_url']}). "
            f"Run `svc login --base-url {base_url}`.",
            exit_code=AUTH,
        )
    expires_at = _parse_time(saved.get("token_expires_at"))
    if expires_at is not None and expires_at <= datetime.now(UTC):
        raise CliFailure("Your login has expired. Run `svc login` again.", exit_code=AUTH)
    return Api(base_url, token=saved["token"]), saved


def _program_key(api_key: str | None) -> str:
    if not api_key or not api_key.strip():
        raise CliFailure("Missing program API key: pass --api-key or set SVC_API_KEY.", exit_code=USAGE)
    return api_key.strip()


# --- login / logout ---------------------------------------------------------------------------------------------


def _poll_interval(start: dict[str, Any]) -> float:
    override = os.environ.get("SVC_POLL_INTERVAL", "")
    try:
        return max(0.05, float(override)) if override else float(start.get("interval") or 2)
    except ValueError:
        return 2.0


def _wait_for_login(api: Api, start: dict[str, Any], output: Output) -> dict[str, Any]:
    interval = _poll_interval(start)
    deadline = time.monotonic() + float(start.get("expires_in") or 300) + 10
    expired = CliFailure("The sign-in link expired before you signed in. Run `svc login` again.", exit_code=AUTH)
    with output.spinner("Waiting for you to sign in in the browser…"):
        while True:
            try:
                data = api.call("GET", "/api/v1/cli/auth/poll", params={"state": start["state"]})["data"]
            except CliFailure as failure:
                if failure.exit_code == RATE_LIMITED and time.monotonic() < deadline:
                    time.sleep(min(60, failure.retry_after_seconds or interval))
                    continue
                raise
            status = data.get("status")
            if status == "complete":
                completed: dict[str, Any] = data
                return completed
            if status == "expired":
                raise expired
            if status == "denied":
                raise CliFailure("Sign-in was cancelled in the browser.", exit_code=AUTH)
            if time.monotonic() > deadline:
                raise expired
            time.sleep(interval)


@app.command()
def login(
    ctx: typer.Context,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the sign-in link; don't open it.")] = False,
    base_url: BaseUrlOption = None,
    json_output: JsonOption = False,
) -> None:
    """Sign in through the browser and save the login token."""
    output, explicit = _setup(ctx, base_url, json_output)
    with reporting(output):
        previous = credentials_load()
        api = Api(_resolve_base_url(explicit, previous))
        start = api.call("POST", "/api/v1/cli/auth/start")["data"]
        output.note(f"Open this link to sign in: {escape(start['login_url'])}")
        output.note(f"Check that the page shows this code: [bold]{escape(start['user_code'])}[/bold]")
        if not no_browser:
            try:
                webbrowser.open(start["login_url"])
            except Exception:  # no browser here: the printed link is enough
                pass
        done = _wait_for_login(api, start, output)
        user = done.get("user") or {}
        path = credentials_save(
            {
                "base_url": api.base_url,
                "token": done["token"],
                "token_expires_at": done.get("token_expires_at"),
                "user": user,
                "saved_at": datetime.now(UTC).isoformat(),
            }
        )
        if previous and previous["base_url"] == api.base_url and previous["token"] != done["token"]:
            # The login this one replaces would otherwise stay valid on the service until it expires.
            try:
                api.call("POST", "/api/v1/cli/auth/logout", token=previous["token"])
            except CliFailure:
                pass
        summary = {
            "logged_in": True,
            "base_url": api.base_url,
            "user": user,
            "token_expires_at": done.get("token_expires_at"),
            "credentials_path": str(path),
        }
        if output.json:
            output.document({"data": summary})
        else:
            who = escape(str(user.get("username", "")))
            output.say(f"[green]Logged in[/green] as [bold]{who}[/bold] at {escape(api.base_url)}.")
            output.say(f"Token saved to {escape(str(path))} (valid until {done.get('token_expires_at')}).")


@app.command()
def logout(ctx: typer.Context, base_url: BaseUrlOption = None, json_output: JsonOption = False) -> None:
    """Revoke the login token on the service and delete it here."""
    output, explicit = _setup(ctx, base_url, json_output)
    with reporting(output):
        saved = credentials_load()
        if saved is None:
            credentials_delete()  # an unreadable file goes too
            if output.json:
                output.document({"data": {"logged_out": True, "revoked": False}})
            else:
                output.say("Not logged in.")
            return
        api, _ = _logged_in(explicit)
        revoked = True
        try:
            api.call("POST", "/api/v1/cli/auth/logout")
        except CliFailure as failure:
            # Already revoked or expired on the service: nothing left to revoke, so forgetting it is enough.
            if failure.status != 401:
                raise
            revoked = False
        credentials_delete()
        if output.json:
            output.document({"data": {"logged_out": True, "revoked": revoked}})
        else:
            output.say("Logged out." + ("" if revoked else " (The token was no longer valid on the service.)"))


# --- init / programs --------------------------------------------------------------------------------------------


def _number_or_text(raw: str) -> int | float | str:
    """Sends numbers as JSON numbers; anything else as typed, so the service's own message explains it."""
    text = raw.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return raw
    return value if value == value and value not in (float("inf"), float("-inf")) else raw


def _commission(program: dict[str, Any]) -> str:
    kind = str(program.get("commission_type", ""))
    rate = program.get("commission_rate")
    # A fixed rate is an amount in the smallest unit of each sale's currency: a program has no currency of its own.
    return f"{rate}% {kind}" if "percent" in kind else f"{rate} {kind} (smallest currency unit)"


@app.command()
def init(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Option("--name", help="Program name.")] = None,
    domain: Annotated[str | None, typer.Option("--domain", help="The site the tracker runs on.")] = None,
    commission_type: Annotated[
        str | None,
        typer.Option("--commission-type", help="percent, fixed, recurring_percent or recurring_fixed."),
    ] = None,
    commission_rate: Annotated[
        str | None,
        typer.Option("--commission-rate", help="Percent (at most 100) or a fixed amount in the smallest unit."),
    ] = None,
    duration_months: Annotated[
        int | None, typer.Option("--duration-months", help="Recurring types: months paid, 0 = lifetime.")
    ] = None,
    cookie_duration: Annotated[
        int | None, typer.Option("--cookie-duration", help="Attribution window in days (1 to 365).")
    ] = None,
    advertiser_id: Annotated[
        int | None, typer.Option("--advertiser-id", help="Workspace to create it in (default: your first).")
    ] = None,
    no_input: Annotated[bool, typer.Option("--no-input", help="Never prompt for missing values.")] = False,
    base_url: BaseUrlOption = None,
    json_output: JsonOption = False,
) -> None:
    """Create a program; its API keys are printed once."""
    output, explicit = _setup(ctx, base_url, json_output)
    with reporting(output):
        api, _ = _logged_in(explicit)
        if not no_input:
            name = name or typer.prompt("Program name", err=True)
            domain = domain or typer.prompt("Domain (e.g. shop.example.com)", err=True)
            commission_type = commission_type or typer.prompt(
                "Commission type (percent, fixed, recurring_percent, recurring_fixed)", default="percent", err=True
            )
            commission_rate = commission_rate or typer.prompt("Commission rate", err=True)
        payload: dict[str, Any] = {"name": name, "domain": domain, "commission_type": commission_type}
        payload["commission_rate"] = _number_or_text(commission_rate) if commission_rate is not None else None
        optional = {
            "duration_months": duration_months,
            "cookie_duration": cookie_duration,
            "advertiser_id": advertiser_id,
        }
        payload.update({key: value for key, value in optional.items() if value is not None})
        body = api.call("POST", "/api/v1/cli/init", json=payload)
        if output.json:
            output.document(body)
            return
        data = body["data"]
        program = data["program"]
        output.say(
            f"[green]Created[/green] program #{program['id']} [bold]{escape(program['name'])}[/bold] "
            f"({escape(program['domain'])}), {_commission(program)}, "
            f"advertiser {escape(str(program['advertiser_name']))} (#{program['advertiser_id']})."
        )
        output.say("[bold]API keys: shown only this once. Store them now.[/bold]")
        output.say(f"  live: {data['api_key']}")
        output.say(f"  test: {data['test_api_key']}")
        output.say(f"Next: export SVC_API_KEY={data['api_key']} then svc status and svc test-event")


@app.command()
def programs(ctx: typer.Context, base_url: BaseUrlOption = None, json_output: JsonOption = False) -> None:
    """List the programs of your account (keys masked)."""
    output, explicit = _setup(ctx, base_url, json_output)
    with reporting(output):
        api, _ = _logged_in(explicit)
        body = api.call("GET", "/api/v1/cli/programs")
        if output.json:
            output.document(body)
            return
        if not body["data"]:
            output.say("No programs yet. Create one with `svc init`.")
            return
        table = Table("ID", "Name", "Domain", "Advertiser", "Role", "Commission", "API key")
        for program in body["data"]:
            table.add_row(
                str(program["id"]),
                escape(program["name"]),
                escape(program["domain"]),
                f"{escape(str(program['advertiser_name']))} (#{program['advertiser_id']})",
                program.get("role", ""),
                _commission(program),
                program["api_token_masked"],
            )
        output.out.print(table)


# --- status / test-event ----------------------------------------------------------------------------------------


@app.command()
def status(
    ctx: typer.Context, api_key: ApiKeyOption = None, base_url: BaseUrlOption = None, json_output: JsonOption = False
) -> None:
    """The program's integration health (program key from --api-key or SVC_API_KEY)."""
    output, explicit = _setup(ctx, base_url, json_output)
    with reporting(output):
        api = Api(_resolve_base_url(explicit, credentials_load()), token=_program_key(api_key))
        body = api.call("GET", "/api/v1/cli/status")
        if output.json:
            output.document(body)
            return
        output.warnings(body)
        data = body["data"]
        program, key, readiness = data["program"], data["key"], data["readiness"]
        output.say(
            f"Program #{program['id']} [bold]{escape(program['name'])}[/bold] ({escape(program['domain'])}), "
            f"{key['mode']} key {key['masked']}"
        )
        verdict = {"ready": "[green]ready[/green]", "ready_with_warnings": "[yellow]ready, with warnings[/yellow]"}
        output.say(f"Status: {verdict.get(readiness['status'], '[red]incomplete[/red]')}")
        table = Table("", "Check", "Detail", "Next step", show_lines=False)
        for check in readiness["checks"]:
            table.add_row(
                CHECK_ICONS.get(check["status"], "?"),
                escape(check["title"]),
                escape(check["detail"]),
                escape(check.get("next_step") or ""),
            )
        output.out.print(table)
        for mistake in readiness.get("mistakes") or []:
            output.say(
                f"[yellow]Mistake[/yellow] {escape(mistake['code'])}: {escape(mistake['title'])} "
                f"({mistake['count']}x, last {escape(_time_text(mistake.get('last_seen_at')))})"
            )
            output.say(f"  Fix: {escape(mistake['fix'])}")
        if readiness.get("next_step"):
            output.say(f"Next step: {escape(readiness['next_step'])}")


@app.command("test-event")
def test_event(
    ctx: typer.Context, api_key: ApiKeyOption = None, base_url: BaseUrlOption = None, json_output: JsonOption = False
) -> None:
    """Run a synthetic click, lead and sale in test mode (10 runs per program per hour)."""
    output, explicit = _setup(ctx, base_url, json_output)
    with reporting(output):
        api = Api(_resolve_base_url(explicit, credentials_load()), token=_program_key(api_key))
        body = api.call("POST", "/api/v1/cli/test-event")
        data = body["data"]
        if output.json:
            output.document(body)
        else:
            output.warnings(body)
            verdict = "[green]passed[/green]" if data.get("success") else "[red]failed[/red]"
            output.say(
                f"Verification {data.get('run_id')} of program #{data.get('program_id')}: {verdict} "
                f"({data.get('duration_ms')} ms)"
            )
            for step in data.get("steps", []):
                icon = CHECK_ICONS["pass" if step.get("ok") else "fail"]
                detail = f"event {step['event_id']}" if step.get("ok") else escape(str(step.get("message", "")))
                output.say(f" {icon} {step.get('step')}: {detail}")
            limit = data.get("limit") or {}
            if "runs_remaining" in limit:
                output.say(f"Runs left this hour: {limit['runs_remaining']} of {limit.get('runs_per_hour')}")
        if not data.get("success"):
            raise typer.Exit(VERIFICATION_FAILED)


# --- mcp --------------------------------------------------------------------------------------------------------


@app.command()
def mcp(
    ctx: typer.Context,
    agent_key: Annotated[
        str | None,
        typer.Option(
            "--agent-key",
            envvar="SVC_AGENT_KEY",
            help="Agent API key (agt_…). Prefer SVC_AGENT_KEY: a command line is visible to other users.",
            show_default=False,
        ),
    ] = None,
    base_url: BaseUrlOption = None,
) -> None:
    """Serve the agent API as Model Context Protocol tools on stdio (for Claude Desktop, Cursor, any MCP client)."""
    # Imported here: the MCP SDK takes about a second to import, which every other command would pay.
    from .mcp_server import run as mcp_run

    _, explicit = _setup(ctx, base_url, False)
    raise typer.Exit(mcp_run(_resolve_base_url(explicit, credentials_load()), agent_key))


# --- logs / explain ---------------------------------------------------------------------------------------------

FOLLOW_INTERVAL_SECONDS = 2.0
LOGS_ROUTE = "cli-logs"  # the route of `svc logs` itself: its own polls are not echoed while following
LOGS_PAGE_MAX = 100  # the service's largest page (programs.calllog.LOGS_PAGE_SIZE_MAX)
# How far back --follow looks for the newest calls that are not `svc logs` polls, in pages of LOGS_PAGE_MAX.
FOLLOW_LOOKBACK_PAGES = 5


def _pause(seconds: float) -> None:
    time.sleep(seconds)


def _logs_table(rows: list[dict[str, Any]], *, header: bool = True) -> Table:
    table = Table("Time (UTC)", "Call", "Status", "Error", "Key", "ms", "Request id", show_header=header)
    for row in rows:
        status = row.get("status", 0)
        color = "green" if status < 400 else ("yellow" if status < 500 else "red")
        error = " ".join(part for part in (row.get("error_code") or "", row.get("message") or "") if part)
        key = _key_text(row)
        table.add_row(
            escape(_time_text(row.get("created_at"), zone=False)),
            escape(f"{row.get('method', '')} {row.get('route', '')}"),
            f"[{color}]{status}[/{color}]",
            escape(error) or "–",
            escape(key),
            str(row.get("latency_ms", "")),
            escape(row.get("request_id") or ""),
        )
    return table


def _key_text(row: dict[str, Any]) -> str:
    """The key a call sent: its mask and mode; a key regeneration replaced as the service names it ("replaced key
    ending …1234"), or, from a service that only notes it in the excerpt, "replaced key"; "–" when none is known."""
    if row.get("key_masked"):
        return " ".join(part for part in (str(row["key_masked"]), str(row.get("key_mode") or "")) if part)
    excerpt = row.get("excerpt")
    if not isinstance(excerpt, dict):
        excerpt = {}
    if excerpt.get("retired_key"):
        replaced_on = f" (replaced on {excerpt['replaced_on']})" if excerpt.get("replaced_on") else ""
        return f"replaced key{replaced_on}"
    return "–"


@app.command()
def logs(
    ctx: typer.Context,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help=f"Keep polling (every {FOLLOW_INTERVAL_SECONDS:g} s) until Ctrl-C.")
    ] = False,
    status_filter: Annotated[
        str | None, typer.Option("--status", help="A status class (2xx, 4xx, 5xx) or an exact code (404).")
    ] = None,
    route: Annotated[str | None, typer.Option("--route", help="A route name, e.g. track-sale.")] = None,
    error_code: Annotated[str | None, typer.Option("--error-code", help="An error code, e.g. no_attribution.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="ISO 8601 date or date-time (UTC if naive).")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100, help="How many of the newest calls to show.")] = 20,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    json_output: JsonOption = False,
) -> None:
    """The program's request log: its latest API calls, newest first (program key from --api-key or SVC_API_KEY).
    With --follow, the newest calls, then each new one as it comes (--json: one JSON object a line)."""
    output, explicit = _setup(ctx, base_url, json_output)
    filters = {"status": status_filter, "route": route, "error_code": error_code, "since": since}
    params = {name: value for name, value in filters.items() if value}
    with reporting(output):
        api = Api(_resolve_base_url(explicit, credentials_load()), token=_program_key(api_key))
        body = api.call("GET", "/api/v1/cli/logs", params={**params, "limit": str(limit)})
        rows = body["data"]
        if not follow:
            if output.json:
                output.document(body)
                return
            output.warnings(body)
            if not rows:
                output.say("No calls logged" + (" with these filters." if params else " yet."))
                return
            output.out.print(_logs_table(rows))
            if body.get("meta", {}).get("next_cursor"):
                output.say(f"Showing the newest {len(rows)}; older calls: --limit, or the dashboard's Logs page.")
            return
        last_id = max((row["id"] for row in rows), default=0)

        def shown(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [row for row in batch if route == LOGS_ROUTE or row.get("route") != LOGS_ROUTE]

        if route != LOGS_ROUTE and len(shown(rows)) < len(rows):
            # Polls of `svc logs` took places among the newest: look further back for `limit` calls to show.
            rows = _newest_calls(api, params, first=body, limit=limit)
        _follow_print(output, shown(list(reversed(rows))), header=True)
        try:
            while True:
                _pause(FOLLOW_INTERVAL_SECONDS)
                body = api.call(
                    "GET", "/api/v1/cli/logs", params={**params, "after": str(last_id), "limit": str(LOGS_PAGE_MAX)}
                )
                fresh = body["data"]
                if fresh:
                    last_id = fresh[-1]["id"]
                _follow_print(output, shown(fresh), header=False)
        except KeyboardInterrupt:
            return


def _newest_calls(api: Api, params: dict[str, str], *, first: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    """The newest `limit` calls that are not `svc logs` polls, newest first: those of the first page (`first`), then
    of the older pages, at most FOLLOW_LOOKBACK_PAGES of LOGS_PAGE_MAX rows. So `--follow --limit 1` starts with
    the latest call even when the polls of an earlier follow are the newest rows."""
    kept = [row for row in first["data"] if row.get("route") != LOGS_ROUTE]
    cursor = (first.get("meta") or {}).get("next_cursor")
    for _ in range(FOLLOW_LOOKBACK_PAGES):
        if len(kept) >= limit or not cursor:
            break
        page = api.call(
            "GET", "/api/v1/cli/logs", params={**params, "cursor": str(cursor), "limit": str(LOGS_PAGE_MAX)}
        )
        kept += [row for row in page["data"] if row.get("route") != LOGS_ROUTE]
        cursor = (page.get("meta") or {}).get("next_cursor")
    return kept[:limit]


def _follow_print(output: Output, rows: list[dict[str, Any]], *, header: bool) -> None:
    """Rows oldest first: one JSON object a line under --json, else table rows (the header only first)."""
    if output.json:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    if rows or header:
        output.out.print(_logs_table(rows, header=header))


def _explain_sale(output: Output, data: dict[str, Any]) -> None:
    output.say(f"Sale [bold]{escape(data['transaction_id'])}[/bold]: {escape(data['outcome'])}")
    output.say(escape(data["summary"]))
    sale = data.get("sale")
    if sale:
        output.say(
            f"Amount {escape(money(sale['amount_cents'], sale['currency']))}, {escape(sale['sale_type'])}, "
            f"on {escape(_time_text(sale['sale_date']))}{' (test)' if sale.get('is_test') else ''}"
        )
    attribution = data["attribution"]
    output.say(
        f"Attribution ({escape(attribution['path'])} path): matched [bold]{escape(attribution['matched_rule'])}[/bold]"
    )
    icons = {"matched": CHECK_ICONS["pass"], "no_match": CHECK_ICONS["fail"]}
    for rule in attribution.get("rules") or []:
        output.say(f" {icons.get(rule['status'], '·')} {escape(rule['description'])} ({rule['status']})")
    click = attribution.get("click")
    if click:
        link = f" on {escape(click['link']['short_link'])}" if click.get("link") else ""
        output.say(f"Click {escape(click['click_id'])}{link} at {escape(_time_text(click['clicked_at']))}")
        _explain_rules(output, click.get("rules"))
    if attribution.get("window"):
        output.say(f"Window: {escape(attribution['window']['text'])}")
    partner = data.get("partner")
    output.say(f"Partner: {escape(partner['name']) if partner else 'none'}")
    commission = data.get("commission")
    if commission:
        policy = commission["policy"]
        output.say(
            f"Policy ({escape(policy['source'])}): {escape(policy['commission_type'])} {escape(policy['rate'])}; "
            f"arithmetic: {escape(commission['arithmetic']['text'])}"
        )
        if commission.get("id"):
            payable = f"; {commission['payable_text']}" if commission.get("payable_text") else ""
            output.say(
                f"Commission #{commission['id']}: {escape(money(commission['amount_cents'], commission['currency']))}, "
                f"{escape(str(commission['status']))}{escape(payable)}"
            )
        if commission.get("no_commission_text"):
            output.say(f"No commission: {escape(commission['no_commission_text'])}")
    review = data.get("review") or {}
    if review.get("text"):
        output.say(f"Fraud rules: {escape(review['text'])}")
    _explain_rules(output, review.get("rules"))
    for decision in review.get("history") or []:
        rule = f" ({decision['rule']})" if decision.get("rule") else ""
        output.say(
            f" · {escape(_time_text(decision['created_at']))} {escape(decision['action'])} by "
            f"{escape(decision['actor'])}{escape(rule)}"
        )
    refunds = data.get("refunds") or {}
    if refunds.get("count"):
        output.say(f"Refunds: {escape(refunds['text'])}")
        for step in refunds.get("steps", []):
            when, reason = _time_text(step["created_at"]), step["reason"] or ""
            output.say(f" · {escape(when)} {escape(str(step['step']))} {escape(reason)}")
    entries = (data.get("ledger") or {}).get("entries") or []
    if entries:
        table = Table("Time (UTC)", "Kind", "Amount", "Running total", "Memo")
        for entry in entries:
            table.add_row(
                escape(_time_text(entry["created_at"], zone=False)),
                escape(entry["kind"]),
                escape(money(entry["amount_cents"], entry["currency"])),
                escape(money(entry["running_total_cents"], entry["currency"])),
                escape(entry.get("memo") or ""),
            )
        output.out.print(table)


def _explain_rules(output: Output, rules: list[dict[str, Any]] | None) -> None:
    """The fraud rules that decided something, one a line: what it did and why."""
    for rule in rules or []:
        output.say(f" ! {escape(rule['text'])} ({escape(rule['status'])})")


def _explain_click(output: Output, data: dict[str, Any]) -> None:
    output.say(f"Click [bold]{escape(data['click_id'])}[/bold]: {escape(data['outcome'])}")
    output.say(escape(data["summary"]))
    partner, link = data.get("partner"), data.get("link")
    via = f" via {escape(link['short_link'])}" if link else ""
    output.say(f"Partner: {escape(partner['name']) if partner else 'none'}{via}; clicks: {len(data['clicks'])}")
    _explain_rules(output, data.get("rules"))


def _explain_customer(output: Output, data: dict[str, Any]) -> None:
    customer = data["customer"]
    key = f", customer_key {escape(customer['customer_key'])}" if customer.get("customer_key") else ""
    output.say(f"Customer [bold]{escape(customer['click_id'])}[/bold]{key}: {escape(customer['status'])}")
    partner = data.get("partner")
    clicks = data["clicks"]
    counted = f" ({clicks['counted']} counted)" if "counted" in clicks else ""
    output.say(f"Partner: {escape(partner['name']) if partner else 'none'}; clicks: {clicks['count']}{counted}")
    _explain_rules(output, data.get("rules"))
    output.say(f"Window: {escape(data['window']['text'])}")
    output.say(f"Leads: {len(data['leads'])}" + ("" if data["leads"] else " (no lead was sent)"))
    for sale in data["sales"]:
        commission = sale.get("commission")
        paid = ""
        if commission:
            paid = f", commission #{commission['id']} {money(commission['amount_cents'], sale['currency'])} "
            paid += str(commission["status"])
        if commission and commission.get("held"):
            paid += f" on hold{' by ' + commission['hold_rule'] if commission.get('hold_rule') else ''}"
        output.say(
            f" · sale {escape(str(sale['transaction_id']))} {escape(money(sale['amount_cents'], sale['currency']))}, "
            f"attributed by {escape(sale['attributed_by'] or '–')}{escape(paid)}"
        )
    for refused in data.get("refused_sales") or []:
        output.say(
            f" · refused {escape(str(refused['transaction_id']))}: click {refused['click_age_days']} days old, "
            f"window {refused['window_days']} days"
        )


@app.command()
def explain(
    ctx: typer.Context,
    transaction_id: Annotated[str | None, typer.Argument(help="The sale's transaction_id.", show_default=False)] = None,
    click_id: Annotated[str | None, typer.Option("--click-id", help="Explain the customer of this click.")] = None,
    customer_key: Annotated[
        str | None, typer.Option("--customer-key", help="Explain the customer with this key.")
    ] = None,
    api_key: ApiKeyOption = None,
    base_url: BaseUrlOption = None,
    json_output: JsonOption = False,
) -> None:
    """Why a sale (or a customer) was credited as it was: the rule that matched, the click and the window, the
    commission's arithmetic, refunds and ledger (program key from --api-key or SVC_API_KEY)."""
    output, explicit = _setup(ctx, base_url, json_output)
    given = {"transaction_id": transaction_id, "click_id": click_id, "customer_key": customer_key}
    params = {name: value for name, value in given.items() if value}
    with reporting(output):
        if len(params) != 1:
            raise CliFailure("Give exactly one of a transaction id, --click-id or --customer-key.", exit_code=USAGE)
        api = Api(_resolve_base_url(explicit, credentials_load()), token=_program_key(api_key))
        body = api.call("GET", "/api/v1/cli/explain", params=params)
        if output.json:
            output.document(body)
            return
        output.warnings(body)
        data = body["data"]
        if data.get("kind") == "customer":
            _explain_customer(output, data)
        elif data.get("kind") == "click":
            _explain_click(output, data)
        else:
            _explain_sale(output, data)


# --- listen / trigger -------------------------------------------------------------------------------------------

LISTEN_INTERVAL_SECONDS = 1.0
FORWARD_TIMEOUT_SECONDS = 10.0
# The Standard Webhooks secret form (webhooks.signing.secret_generate): whsec_ and 32 random bytes in base64. Made
# here rather than imported, because the CLI must not need Django.
SESSION_SECRET_PREFIX = "whsec_"
SESSION_SECRET_BYTES = 32


def session_secret_generate() -> str:
    return SESSION_SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SESSION_SECRET_BYTES)).decode()


def _events_path(program_id: int) -> str:
    return f"/api/v1/cli/programs/{program_id}/webhook-events"


def _program_pick(api: Api, program_id: int | None) -> int:
    """--program when given; else the account's program when it has exactly one."""
    if program_id is not None:
        return program_id
    programs = api.call("GET", "/api/v1/cli/programs")["data"]
    if len(programs) == 1:
        return int(programs[0]["id"])
    if not programs:
        raise CliFailure("No programs yet. Create one with `svc init`.", exit_code=USAGE)
    listed = ", ".join(f"#{program['id']} {program['name']}" for program in programs)
    raise CliFailure(f"You have several programs ({listed}): pick one with --program.", exit_code=USAGE)


@dataclass
class Forwarded:
    event: dict[str, Any]
    status: int | None = None
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        outcome: dict[str, Any] = {"status": self.status} if self.error is None else {"error": self.error}
        return {"id": self.event.get("id"), "type": self.event.get("type"), **outcome}


def _forward(client: httpx.Client, url: str, signer: Webhook, event: dict[str, Any]) -> Forwarded:
    """POSTs the envelope as real deliveries send it (compact JSON, webhooks.delivery.request_parts), signed
    with the session secret. Any answer counts as forwarded; only a failure to reach the app is an error."""
    body = json.dumps(event, separators=(",", ":"))
    now = datetime.now(UTC)
    headers = {
        "webhook-id": str(event["id"]),
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signer.sign(str(event["id"]), now, body),
        "content-type": "application/json",
        "user-agent": f"svc-cli/{__version__} (svc listen)",
    }
    try:
        response = client.post(url, content=body.encode(), headers=headers)
    except (httpx.HTTPError, httpx.InvalidURL) as error:  # InvalidURL (http://:0) is not an HTTPError
        return Forwarded(event, error=f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
    return Forwarded(event, status=response.status_code)


def _forwarded_print(output: Output, forwarded: Forwarded) -> None:
    if output.json:
        typer.echo(json.dumps(forwarded.as_json()))
        return
    event = forwarded.event
    when = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    if forwarded.error is not None:
        outcome = f"[red]-> error: {escape(forwarded.error)}[/red]"
    else:
        color = "green" if forwarded.status is not None and forwarded.status < 300 else "yellow"
        outcome = f"[{color}]-> {forwarded.status}[/{color}]"
    mode = "" if event.get("livemode") else " (test)"
    output.say(f"{when}  {escape(str(event.get('type')))}  {escape(str(event.get('id')))}{mode}  {outcome}")


def _poll(api: Api, path: str, params: dict[str, str], output: Output, interval: float) -> dict[str, Any] | None:
    """One poll; None when it should simply be tried again (rate limited, or the service briefly unreachable)."""
    try:
        return api.call("GET", path, params=params)
    except CliFailure as failure:
        if failure.exit_code == RATE_LIMITED:
            _pause(float(failure.retry_after_seconds or interval))
            return None
        if failure.exit_code == NETWORK or (failure.status is not None and failure.status >= 500):
            output.err.print(f"[yellow]Warning:[/yellow] {escape(failure.message)}; retrying.")
            _pause(max(interval, 2.0))
            return None
        raise


@app.command()
def listen(
    ctx: typer.Context,
    forward_to: Annotated[
        str, typer.Option("--forward-to", help="Where to POST each event, e.g. http://localhost:3000/webhooks.")
    ],
    events: Annotated[
        str | None, typer.Option("--events", help="Only these event types, comma-separated (default: all).")
    ] = None,
    program: ProgramOption = None,
    interval: Annotated[
        float, typer.Option("--interval", min=0.05, help="Seconds between polls of the service.")
    ] = LISTEN_INTERVAL_SECONDS,
    max_events: Annotated[
        int | None, typer.Option("--max-events", min=1, help="Stop after forwarding this many events.")
    ] = None,
    base_url: BaseUrlOption = None,
    json_output: JsonOption = False,
) -> None:
    """Receive the program's webhook events (live and test mode) as they happen and forward each to a local app,
    signed with a session secret printed at start (Standard Webhooks headers), until Ctrl-C. With --json: one
    JSON object a line per event forwarded."""
    output, explicit = _setup(ctx, base_url, json_output)
    if not forward_to.startswith(("http://", "https://")):
        output.failure(CliFailure("--forward-to must be an http:// or https:// URL.", exit_code=USAGE))
        raise typer.Exit(USAGE)
    with reporting(output):
        api, _ = _logged_in(explicit)
        program_id = _program_pick(api, program)
        path = _events_path(program_id)
        filters = {"types": events} if events else {}
        # Without a cursor the service answers where its stream is now: only events from here on are forwarded.
        cursor = int(api.call("GET", path, params=filters)["meta"]["cursor"])
        secret = session_secret_generate()
        signer = Webhook(secret)
        output.note(f"Ready! Your webhook signing secret is {secret} (^C to quit)")
        output.note(f"Forwarding program #{program_id}'s events to {escape(forward_to)}")
        forwarded_count = 0
        # The app is local: no proxy from the environment in between.
        with httpx.Client(timeout=FORWARD_TIMEOUT_SECONDS, follow_redirects=False, trust_env=False) as client:
            try:
                while max_events is None or forwarded_count < max_events:
                    body = _poll(api, path, {**filters, "after": str(cursor)}, output, interval)
                    if body is None:
                        continue
                    for item in body["data"]:
                        if max_events is not None and forwarded_count >= max_events:
                            return
                        _forwarded_print(output, _forward(client, forward_to, signer, item["event"]))
                        forwarded_count += 1
                        cursor = int(item["cursor"])
                    cursor = max(cursor, int(body["meta"]["cursor"]))
                    if not body["meta"].get("has_more"):
                        _pause(interval)
            except KeyboardInterrupt:
                return


@app.command()
def trigger(
    ctx: typer.Context,
    event_type: Annotated[str, typer.Argument(help="An event type, e.g. sale.created.", show_default=False)],
    program: ProgramOption = None,
    base_url: BaseUrlOption = None,
    json_output: JsonOption = False,
) -> None:
    """Send a synthetic test-mode event of the type, with an example payload, the way real events go (svc listen
    and endpoints that take test events receive it)."""
    output, explicit = _setup(ctx, base_url, json_output)
    with reporting(output):
        api, _ = _logged_in(explicit)
        program_id = _program_pick(api, program)
        body = api.call("POST", _events_path(program_id) + "/trigger", json={"type": event_type})
        if output.json:
            output.document(body)
            return
        event = body["data"]["event"]
        output.say(
            f"Triggered [bold]{escape(event['type'])}[/bold] {escape(event['id'])} (test mode) "
            f"on program #{event['program_id']}."
        )
