"""Every dashboard page of a demo-like world (manage.py demo's workspace, with clicks, leads, sales, a refund, an
error call, flagged clicks and a webhook delivery log), signed in as its owner, in headless Chromium at a laptop's
1366x900 and a phone's 390x844: no table wider than its box, nothing wider than the page, no short word broken
across lines (rule codes, times, key masks, excerpt fields, amounts), every tab in view on a phone, and the
commissions table whole at 1366 px. Screenshots go to test-artifacts/layout-*.png."""

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from imports.engine import import_source
from imports.models import ImportUpload
from programs.demo import demo_create
from programs.models import Program
from tests.dashboard.pages.webhook_rows import delivery_make
from tests.factories import WebhookEndpointFactory
from tests.helpers import bearer
from tests.imports.engine_sources import small_source
from webhooks.models import DeliveryStatus

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
LAPTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
SIZES = {"laptop": LAPTOP, "phone": PHONE}
# A longer token may break where it meets the edge of its box (a URL longer than a phone's line does).
LONGEST_UNBREAKABLE = 40

# What a page gets wrong, measured in the page: tables wider than their box, a page wider than the window, and
# words broken inside: a Range over a word (up to a hyphen, slash, ?, &, = or colon after it, where a line may end:
# "track-" "sale", "https:/" "/" "hooks.example.com/") with boxes at two heights. Request ids are opaque tokens and may
# break anywhere; code snippets (pre) scroll.
LAYOUT_PROBLEMS = """(longest) => {
  const problems = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth) problems.push(`page ${doc.scrollWidth}px wide in ${doc.clientWidth}px`);
  for (const table of document.querySelectorAll("main table")) {
    const box = table.closest(".table-wrap") || table.parentElement;
    const width = table.getBoundingClientRect().width;
    const name = table.id || table.className;
    if (width > box.clientWidth + 1) problems.push(`table ${name} ${width}px in ${box.clientWidth}px`);
  }
  const scopes = document.querySelectorAll(
    "header.topbar, nav.tabs, main td, main th, main dd, main code, main .badge, main .state, main .funnel .value"
  );
  const seen = new Set();
  for (const scope of scopes) {
    const walker = document.createTreeWalker(scope, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (seen.has(node)) continue;
      seen.add(node);
      if (node.parentElement.closest("pre, td.request-id, .visually-hidden")) continue;
      for (const token of node.textContent.matchAll(/\\S+/g)) {
        if (token[0].length > longest) continue;
        for (const word of token[0].matchAll(/[^-\\/?&=:;]+[-\\/?&=:;]*/g)) {
          const range = document.createRange();
          range.setStart(node, token.index + word.index);
          range.setEnd(node, token.index + word.index + word[0].length);
          const boxes = [...range.getClientRects()].filter((r) => r.width > 0);
          const lines = new Set(boxes.map((r) => Math.round(r.bottom)));
          if (lines.size > 1) problems.push(`"${word[0]}" of "${token[0]}" broken over ${lines.size} lines`);
        }
      }
    }
  }
  return problems;
}"""


@dataclass
class World:
    program_id: int
    username: str
    password: str
    transaction_id: str
    endpoint_id: int
    upload_id: int


def _send(client: APIClient, path: str, body: dict[str, Any], key: str | None = None, **extra: str) -> dict[str, Any]:
    headers: dict[str, Any] = {**(bearer(key) if key else {}), **extra}
    response = client.post(path, body, format="json", **headers)
    return response.json()


@pytest.fixture
def world() -> World:
    """The demo's main program after a small integration: clicks from three machines (one of them twice: a
    duplicate), a lead, three sales (one for 1,234,567.89 USD), a refund with its reason, a refused sale, and a
    webhook endpoint with a failed and a succeeded delivery."""
    demo = demo_create()
    main = demo["programs"]["main"]
    key = main["api_key"]
    client = APIClient()
    click_ids = []
    for n, link in enumerate([demo["links"]["main"], demo["links"]["main"], demo["links"]["main_second_partner"]]):
        url = f"https://shop.example.com/pricing/annual-plan?aff={link}&utm_source=newsletter-{n}"
        answer = _send(
            client,
            "/api/v1/track/click",
            {"affiliate_url": url},
            REMOTE_ADDR=f"203.0.113.{n + 10}",
            HTTP_USER_AGENT=f"Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0.{n}",
        )
        click_ids.append(answer["click_id"])
    _send(  # the first machine again: a duplicate click
        client,
        "/api/v1/track/click",
        {"affiliate_url": f"https://shop.example.com/?aff={demo['links']['main']}"},
        REMOTE_ADDR="203.0.113.10",
        HTTP_USER_AGENT="Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0.0",
    )
    for n, click_id in enumerate(click_ids):
        _send(client, "/api/v1/track/lead", {"click_id": click_id, "customer_key": f"customer-{n}"}, key)
    sales = [("txn-annual-plan-0001", 4900, 0), ("txn-annual-plan-0002", 123456789, 1), ("txn-small-3", 1999, 2)]
    for transaction_id, amount, customer in sales:
        _send(
            client,
            "/api/v1/track/sale",
            {
                "transaction_id": transaction_id,
                "amount_cents": amount,
                "currency": "USD",
                "customer_key": f"customer-{customer}",
            },
            key,
        )
    _send(
        client,
        "/api/v1/track/refund",
        {"transaction_id": "txn-small-3", "refund_amount_cents": 999, "refund_id": "re-1", "reason": "chargeback"},
        key,
    )
    _send(
        client,
        "/api/v1/track/sale",
        {"transaction_id": "txn-nobody", "amount_cents": 100, "customer_key": "ghost"},
        key,
    )
    endpoint = WebhookEndpointFactory.create(program=Program.objects.get(pk=main["id"]), description="Our order system")
    delivery_make(endpoint, status=DeliveryStatus.FAILED, attempts=3)
    delivery_make(endpoint, type="commission.created", status=DeliveryStatus.SUCCEEDED, attempts=1)
    upload = _dry_run_upload(Program.objects.get(pk=main["id"]))
    return World(
        program_id=main["id"],
        username=demo["users"]["owner"]["username"],
        password=demo["users"]["owner"]["password"],
        transaction_id="txn-annual-plan-0001",
        endpoint_id=endpoint.pk,
        upload_id=upload.pk,
    )


def _dry_run_upload(program: Program) -> ImportUpload:
    """A Rewardful dry run whose report has money that differs for one partner, a partner arriving deactivated and
    a link parameter to turn on."""
    source = small_source(platform="rewardful")
    partners = [
        dataclasses.replace(
            row,
            reported_owed=(("USD", 3000), ("EUR", 777)) if row.source_id == "p1" else (("USD", 3002 + n),),
            deactivated="disabled on Rewardful" if row.source_id == "p3" else "",
        )
        for n, row in enumerate(source.partners)
    ]
    report = import_source(program, dataclasses.replace(source, partners=partners), dry_run=True)
    return ImportUpload.objects.create(
        program=program,
        platform="rewardful",
        files_digest="0" * 64,
        size=1200,
        report={
            "counts": report.counts_dict(),
            "refusals": [[r.where, r.kind, r.reason] for r in report.refusals],
            **report.summary(),
        },
    )


def sign_in(page, live_server, world: World) -> None:
    page.goto(f"{live_server.url}/")  # signed out: sent to the form
    page.fill("#id_username", world.username)
    page.fill("#id_password", world.password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def pages_of(world: World) -> dict[str, str]:
    """Every dashboard page of the program, by a short name: its path and, after a space, what to wait for."""
    base = f"/programs/{world.program_id}"
    hook = f"{base}/webhooks/{world.endpoint_id}"
    return {
        "programs": "/ .program-card",
        "overview": f'{base}/ #overview[data-state="ready"]',
        "events": f'{base}/events #events[data-state="ready"]',
        "readiness": f'{base}/readiness #readiness[data-state="ready"]',
        "partners": f"{base}/partners .partner",
        "commissions": f"{base}/commissions table.commissions",
        "review": f"{base}/review #held",
        "rules": f"{base}/review/rules #rules",
        "logs": f"{base}/logs table.logs",
        "explain": f"{base}/explain?transaction_id={world.transaction_id} main h2",
        "webhooks": f"{base}/webhooks main .card",
        "webhook-new": f"{base}/webhooks/new form",
        "webhook": f"{hook} main .card",
        "webhook-edit": f"{hook}/edit form",
        "key": f"{base}/key [data-masked-for]",
        "stripe": f"{base}/stripe main .card",
        "payouts": f"{base}/payouts main",
        "import": f"{base}/import #import-upload",
        "import-dry-run": f"{base}/import/uploads/{world.upload_id} #balances",
    }


@pytest.mark.parametrize("size", SIZES)
def test_every_page_fits_and_breaks_no_word(tab, live_server, world, size):
    page = tab.page
    page.set_viewport_size(SIZES[size])
    sign_in(page, live_server, world)
    ARTIFACTS.mkdir(exist_ok=True)
    found = {}
    for name, target in pages_of(world).items():
        path, ready = target.split(" ", 1)
        response = page.goto(f"{live_server.url}{path}")
        assert response is not None and response.status == 200, name
        page.wait_for_selector(ready)
        page.screenshot(path=str(ARTIFACTS / f"layout-{name}-{size}.png"), full_page=True)
        problems = page.evaluate(LAYOUT_PROBLEMS, LONGEST_UNBREAKABLE)
        if problems:
            found[name] = problems
    assert found == {}, "\n".join(f"{name}: {problems}" for name, problems in found.items())
    assert tab.blocked == []


def test_the_commissions_table_is_whole_at_1366_px(tab, live_server, world):
    page = tab.page
    page.set_viewport_size(LAPTOP)
    sign_in(page, live_server, world)
    page.goto(f"{live_server.url}/programs/{world.program_id}/commissions")
    wrap = page.locator(".table-wrap").bounding_box()
    headings = page.eval_on_selector_all(
        "table.commissions th", "cells => cells.map(c => [c.innerText, c.getBoundingClientRect().right])"
    )
    assert [text.replace("\n", " ").lower() for text, _ in headings][-2:] == ["refund reason", "explain"]
    assert all(right <= wrap["x"] + wrap["width"] + 0.5 for _, right in headings)  # nothing scrolled out of view
    assert page.locator("table.commissions td[data-label='Refund reason']", has_text="chargeback").is_visible()
    for link in page.locator("table.commissions td[data-label='Explain'] a").all():
        box = link.bounding_box()
        assert box is not None and box["x"] + box["width"] <= LAPTOP["width"]


def test_on_a_phone_every_tab_is_in_view_and_rule_codes_are_one_line(tab, live_server, world):
    page = tab.page
    page.set_viewport_size(PHONE)
    sign_in(page, live_server, world)
    page.goto(f"{live_server.url}/programs/{world.program_id}/review/rules")
    tabs = page.eval_on_selector_all(
        "nav.tabs a", "links => links.map(a => { const r = a.getBoundingClientRect(); return [r.left, r.right]; })"
    )
    assert len(tabs) == 13  # Stripe, Payouts and Import included: the owner manages the program; Groups too
    assert all(0 <= left and right <= PHONE["width"] for left, right in tabs)
    heights = page.eval_on_selector_all(
        "#rules code", "codes => codes.map(c => [c.textContent, c.getClientRects().length])"
    )
    assert heights and all(lines == 1 for _, lines in heights), heights
    assert {code for code, _ in heights} >= {"duplicate_click"}


def test_logs_keep_times_and_key_masks_on_one_line_on_a_phone(tab, live_server, world):
    page = tab.page
    page.set_viewport_size(PHONE)
    sign_in(page, live_server, world)
    page.goto(f"{live_server.url}/programs/{world.program_id}/logs")
    lines = page.eval_on_selector_all(
        "td.time time, td.key code",
        "items => items.map(i => [i.textContent, new Set([...i.getClientRects()].map(r => Math.round(r.top))).size])",
    )
    assert len(lines) > 10 and all(count == 1 for _, count in lines), lines
    styles = page.eval_on_selector_all(
        "td.excerpt code:not(.long)",
        "codes => codes.map(c => getComputedStyle(c)).map(s => [s.overflowWrap, s.wordBreak])",
    )
    assert styles and all(style == ["break-word", "normal"] for style in styles)


def test_an_unknown_page_shows_the_dashboards_404(tab, live_server, world):
    page = tab.page
    sign_in(page, live_server, world)
    response = page.goto(f"{live_server.url}/programs/{world.program_id}/nope")
    assert response is not None and response.status == 404
    assert page.inner_text("#not-found h1") == "Page not found"
    answer = page.goto(f"{live_server.url}/api/nope")
    assert answer is not None and answer.status == 404
    assert answer.json()["error"]["message"] == "Not found"
