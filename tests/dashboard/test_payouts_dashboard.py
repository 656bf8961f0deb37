"""The Payouts page, the owners' side of issue 27: minimums per currency, a run previewed, confirmed, exported for
PayPal and Wise (the files checked byte for byte), the results imported back and payouts marked one by one, with the
ledger exact at the end. Every action is tried as a member, signed out, without CSRF, with another program's or
workspace's ids and with junk input: never a 500, and a refused request changes nothing."""

import re
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from dashboard import payout_views
from payouts.exports import RESULTS_MAX_BYTES
from payouts.models import Payout, PayoutMinimum, PayoutRun, PayoutRunAudit, PayoutStatus, Rail
from payouts.services import run_confirm, run_preview
from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory
from tests.payouts.money import balance, credited, ledger_exact, payable_partner

pytestmark = pytest.mark.django_db


@pytest.fixture
def program():
    return ProgramFactory(name="Acme")


def client_of(program, role: str, **client) -> Client:
    browser = Client(**client)
    browser.force_login(MembershipFactory.create(workspace=program.workspace, role=role).user)
    return browser


@pytest.fixture
def owner(program) -> Client:
    return client_of(program, Role.OWNER)


@pytest.fixture
def admin(program) -> Client:
    return client_of(program, Role.ADMIN)


@pytest.fixture
def member(program) -> Client:
    return client_of(program, Role.MEMBER)


@pytest.fixture
def due(program):
    """Three partners with money due in USD: Ann (PayPal), Bo (Wise by email), Cy (Wise to a bank)."""
    ann = payable_partner(program, name="Ann", payout_email="ann@example.com")
    credited(ann, program, amount=10_000)  # 20.00 USD
    bo = payable_partner(program, name="Bo", rail=Rail.WISE, payout_email="bo@example.com", holder_name="Bo Berg")
    credited(bo, program, amount=15_000)  # 30.00 USD
    cy = payable_partner(program, name="Cy", rail=Rail.WISE, payout_email="", bank_reference="GB29NWBK60161331926819")
    credited(cy, program, amount=5_000)  # 10.00 USD
    return ann, bo, cy


def base(program) -> str:
    return f"/programs/{program.pk}/payouts"


def run_url(run, action: str = "") -> str:
    return f"/programs/{run.program_id}/payouts/runs/{run.pk}" + (f"/{action}" if action else "")


def payout_url(payout, action: str) -> str:
    return f"{run_url(payout.run)}/payouts/{payout.pk}/{action}"


def flashed(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def upload(data: bytes, name: str = "results.csv") -> dict[str, SimpleUploadedFile]:
    return {"results": SimpleUploadedFile(name, data, content_type="text/csv")}


def payout_of(partner) -> Payout:
    return Payout.objects.get(partner=partner)


def previewed(program) -> PayoutRun:
    return run_preview(program=program, currency="USD", actor="user:someone")


def confirmed(program) -> PayoutRun:
    run = previewed(program)
    run_confirm(run_id=run.pk, actor="user:someone")
    return run


def state() -> tuple[list[Any], list[Any], list[Any]]:
    """Everything a refused request must leave as it was."""
    return (
        list(PayoutRun.objects.order_by("pk").values_list("pk", "status")),
        list(Payout.objects.order_by("pk").values_list("pk", "status", "amount_cents", "rail_reference")),
        list(PayoutMinimum.objects.order_by("pk").values_list("currency", "minimum_cents", "automatic")),
    )


# --- The whole owner flow -----------------------------------------------------------------------------------------


def test_owner_previews_confirms_exports_and_imports_the_results(owner, program, due):
    ann, bo, cy = due

    response = owner.post(f"{base(program)}/preview", {"currency": "USD", "minimum": ""})

    run = PayoutRun.objects.get()
    assert response.status_code == 302 and response["Location"] == run_url(run)
    assert flashed(response) == [
        f"Run #{run.pk} previewed: 3 partners can be paid now, 60.00 USD. Nothing is paid until you confirm."
    ]
    page = owner.get(run_url(run)).content.decode()
    assert "Confirm and pay 60.00 USD" in page and "30.00 USD" in page

    response = owner.post(run_url(run, "confirm"))

    assert response.status_code == 302
    assert flashed(response)[-1].startswith(f"Run #{run.pk} confirmed: 3 payouts, 60.00 USD. Export the PayPal")
    assert (balance(ann), balance(bo), balance(cy)) == (0, 0, 0)

    paypal = owner.post(run_url(run, "export/paypal"))

    assert paypal.status_code == 200
    assert paypal["Content-Type"] == "text/csv; charset=utf-8"
    assert paypal["Content-Disposition"] == f'attachment; filename="payout-run-{run.pk}-paypal.csv"'
    first = payout_of(ann).pk
    assert paypal.content == (
        f"ann@example.com,20.00,USD,payout-{first},Acme: payout #{first} of your commissions,PAYPAL\r\n".encode()
    )

    wise = owner.post(run_url(run, "export/wise"))

    assert wise.status_code == 200
    assert wise.content.decode() == (
        "name,recipientEmail,paymentReference,receiverType,amountCurrency,amount,sourceCurrency,targetCurrency,IBAN\r\n"
        f"Bo Berg,bo@example.com,payout-{payout_of(bo).pk},PERSON,target,30.00,USD,USD,\r\n"
        f"Cy,,payout-{payout_of(cy).pk},PERSON,target,10.00,USD,USD,GB29NWBK60161331926819\r\n"
    )
    assert {payout.status for payout in Payout.objects.all()} == {PayoutStatus.PROCESSING}

    results = (
        "payout_id,status,reference,message\r\n"
        f"payout-{first},paid,5TY05013RG002845M,\r\n"
        f"{payout_of(bo).pk},paid,TW-77,\r\n"
        f"{payout_of(cy).pk},failed,,Wise: account closed\r\n"
    ).encode()
    response = owner.post(run_url(run, "import"), upload(results))

    assert response.status_code == 302 and response["Location"] == run_url(run)
    assert flashed(response)[-4:] == [
        "Results imported: 2 marked paid, 1 marked failed, 0 already settled, 0 refused.",
        f"Line 2: payout #{first} marked paid",
        f"Line 3: payout #{payout_of(bo).pk} marked paid",
        f"Line 4: payout #{payout_of(cy).pk} marked failed: its amount is back on the partner's balance",
    ]
    assert payout_of(ann).rail_reference == "5TY05013RG002845M"
    assert (payout_of(ann).status, payout_of(bo).status, payout_of(cy).status) == ("paid", "paid", "failed")
    assert (balance(ann), balance(bo), balance(cy)) == (0, 0, 1_000)  # the failed 10.00 USD is back
    for partner in due:
        ledger_exact(partner)

    page = owner.get(run_url(run)).content.decode()
    audit = re.findall(r"<td data-label=\"What\">([^<]+)</td>\s*<td data-label=\"Who\">([^<]+)</td>", page)
    assert [what for what, _who in audit] == [
        "Previewed",
        "Confirmed",
        "Exported",
        "Exported",
        "Marked paid",
        "Marked paid",
        "Marked failed",
        "Imported results",
    ]
    assert {who for _what, who in audit} == {f"user:{response.wsgi_request.user.get_username()}"}
    assert "Every PayPal and Wise payout of this run is settled." in page


def test_the_payouts_page_lists_runs_newest_first_with_the_minimums(owner, program, due):
    PayoutMinimum.objects.create(program=program, currency="VND", minimum_cents=50_000, automatic=True)
    older, newer = previewed(program), previewed(program)
    other = previewed(ProgramFactory(workspace=program.workspace))

    page = owner.get(base(program)).content.decode()

    runs = re.findall(r'<tr id="run-(\d+)">', page)
    assert runs == [str(newer.pk), str(older.pk)]
    assert str(other.pk) not in runs
    assert "50,000 VND" in page and 'value="50000"' in page
    assert "3 of 3" in page and "60.00 USD" in page


def test_owner_sets_a_minimum_per_currency_in_its_own_decimals(owner, program):
    response = owner.post(f"{base(program)}/minimum", {"currency": "USD", "minimum": "50.5", "automatic": "on"})

    assert response.status_code == 302
    assert flashed(response) == [
        "Minimum payout in USD: 50.50 USD, paid by the daily scheduled run without confirming."
    ]
    owner.post(f"{base(program)}/minimum", {"currency": "VND", "minimum": "50000"})
    owner.post(f"{base(program)}/minimum", {"currency": "USD", "minimum": "20"})  # changed, no longer automatic

    assert state()[2] == [("USD", 2_000, False), ("VND", 50_000, False)]


@pytest.mark.parametrize(
    "fields",
    [
        {"currency": "USD", "minimum": "abc"},
        {"currency": "USD", "minimum": "-1"},
        {"currency": "USD", "minimum": "1.234"},
        {"currency": "VND", "minimum": "5.5"},
        {"currency": "USD", "minimum": "NaN"},
        {"currency": "USD", "minimum": "Infinity"},
        {"currency": "USD", "minimum": "1e400"},
        {"currency": "USD", "minimum": "9" * 40},
        {"currency": "GBP", "minimum": "5"},
        {"currency": "USD", "minimum": ""},
        {},
    ],
)
def test_a_minimum_that_is_no_amount_is_refused_and_nothing_changes(owner, program, fields):
    PayoutMinimum.objects.create(program=program, currency="USD", minimum_cents=1_000)
    before = state()

    response = owner.post(f"{base(program)}/minimum", fields)

    assert response.status_code == 302
    assert len(flashed(response)) == 1
    assert state() == before


@pytest.mark.parametrize("typed", ["١", "٥٠.٠٠", "５０", "१०", "5٠", "𝟓"])
def test_a_minimum_in_another_scripts_digits_is_refused(owner, program, due, typed):
    """Decimal() reads "١" as 1: a minimum typed in Arabic-Indic, full-width or Devanagari digits is no amount."""
    PayoutMinimum.objects.create(program=program, currency="USD", minimum_cents=1_000)
    before = state()

    response = owner.post(f"{base(program)}/minimum", {"currency": "USD", "minimum": typed})

    assert flashed(response) == [payout_views.AMOUNT_INVALID.format(currency="USD", places=2)]
    assert state() == before
    previewed = owner.post(f"{base(program)}/preview", {"currency": "USD", "minimum": typed})
    assert flashed(previewed)[-1] == payout_views.AMOUNT_INVALID.format(currency="USD", places=2)
    assert not PayoutRun.objects.exists()


def test_a_preview_with_a_minimum_for_this_run_only(owner, program, due):
    response = owner.post(f"{base(program)}/preview", {"currency": "USD", "minimum": "25"})

    run = PayoutRun.objects.get()
    assert run.minimum_cents == 2_500
    assert [line["partner"] for line in run.lines] == ["Bo"]
    assert response["Location"] == run_url(run)
    assert not PayoutMinimum.objects.exists()


@pytest.mark.parametrize("fields", [{"currency": "XXX"}, {"currency": "USD", "minimum": "-5"}, {}])
def test_a_bad_preview_is_refused(owner, program, due, fields):
    response = owner.post(f"{base(program)}/preview", fields)

    assert response.status_code == 302 and response["Location"] == base(program)
    assert not PayoutRun.objects.exists()


def test_confirming_twice_says_so_and_pays_once(owner, program, due):
    run = previewed(program)
    owner.post(run_url(run, "confirm"))

    response = owner.post(run_url(run, "confirm"))

    assert response.status_code == 302
    assert flashed(response)[-1] == f"Payout run #{run.pk} is already confirmed"
    assert Payout.objects.count() == 3
    for partner in due:
        ledger_exact(partner)


def test_exporting_a_run_not_confirmed_or_with_nothing_open_downloads_nothing(owner, program, due):
    run = previewed(program)

    response = owner.post(run_url(run, "export/paypal"))

    assert response.status_code == 302
    assert flashed(response) == [f"Run #{run.pk} is not confirmed: confirm it before exporting."]
    run_confirm(run_id=run.pk, actor="user:someone")
    owner.post(payout_url(payout_of(due[0]), "paid"), {"reference": "PP-1"})

    response = owner.post(run_url(run, "export/paypal"))

    assert response.status_code == 302
    assert flashed(response)[-1] == f"No open PayPal payouts in run #{run.pk}: nothing to export."
    assert not PayoutRunAudit.objects.filter(run=run, action="exported").exists()


def test_owner_marks_a_payout_paid_or_failed_one_by_one(admin, program, due):
    ann, bo, cy = due
    run = confirmed(program)

    paid = admin.post(payout_url(payout_of(ann), "paid"), {"reference": "PP-TX-9"})
    failed = admin.post(payout_url(payout_of(bo), "failed"), {"message": "PayPal: account restricted"})
    again = admin.post(payout_url(payout_of(bo), "paid"), {})
    no_reason = admin.post(payout_url(payout_of(cy), "failed"), {"message": "  "})

    assert flashed(paid)[-1] == f"Payout #{payout_of(ann).pk} to Ann marked paid."
    assert flashed(failed)[-1] == (
        f"Payout #{payout_of(bo).pk} to Bo marked failed: 30.00 USD is back on their balance and they are told why."
    )
    assert flashed(again)[-1] == f"Payout #{payout_of(bo).pk} was failed already: nothing changed."
    assert flashed(no_reason)[-1] == "Say why the payout failed: the partner is told."
    assert [r["Location"] for r in (paid, failed, again, no_reason)] == [run_url(run)] * 4
    assert (payout_of(ann).status, payout_of(ann).rail_reference) == ("paid", "PP-TX-9")
    assert payout_of(bo).failure_message == "PayPal: account restricted"
    assert payout_of(cy).status == PayoutStatus.PENDING
    assert (balance(ann), balance(bo), balance(cy)) == (0, 3_000, 0)
    for partner in due:
        ledger_exact(partner)


def test_a_stripe_payout_is_not_marked_by_hand(owner, program):
    stripe = payable_partner(program, name="Eve", rail=Rail.STRIPE)
    credited(stripe, program, amount=10_000)
    confirmed(program)

    response = owner.post(payout_url(payout_of(stripe), "failed"), {"message": "no"})

    assert flashed(response) == [f"Payout #{payout_of(stripe).pk} is paid by Stripe: its transfer settles it."]
    assert payout_of(stripe).status == PayoutStatus.PENDING


# --- Owners' CSV exports ------------------------------------------------------------------------------------------


def test_members_download_the_payouts_and_commissions_csv(member, program, due):
    confirmed(program)

    payouts = member.get(f"{base(program)}/payouts.csv")
    commissions = member.get(f"{base(program)}/commissions.csv")

    assert payouts.status_code == commissions.status_code == 200
    assert payouts["Content-Disposition"] == f'attachment; filename="program-{program.pk}-payouts.csv"'
    payout_lines = b"".join(payouts.streaming_content).decode().split("\r\n")
    assert payout_lines[0].startswith("payout_id,run_id,partner_id,partner,amount,currency,status")
    assert len(payout_lines) == 3 + 2  # header, three payouts, the last line's end
    commission_lines = b"".join(commissions.streaming_content).decode().split("\r\n")
    assert commission_lines[0].startswith("commission_id,partner_id,partner,amount,refunded,currency,status")
    assert len(commission_lines) == 3 + 2


# --- Roles, isolation, CSRF ---------------------------------------------------------------------------------------


def actions(program, run, payout) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{base(program)}/minimum", {"currency": "USD", "minimum": "1"}),
        (f"{base(program)}/preview", {"currency": "USD"}),
        (run_url(run, "confirm"), {}),
        (run_url(run, "export/paypal"), {}),
        (run_url(run, "import"), upload(f"{payout.pk},paid,,".encode())),
        (payout_url(payout, "paid"), {"reference": "x"}),
        (payout_url(payout, "failed"), {"message": "x"}),
    ]


def test_a_member_reads_the_pages_but_cannot_act(member, program, due):
    run = previewed(program)
    done = confirmed(program)  # Ann, Bo and Cy are paid by this one; `run` stays a preview
    payout = payout_of(due[0])
    before = state()

    for url, fields in actions(program, run, payout):
        response = member.post(url, fields)
        assert response.status_code == 403, url
        assert "Your role (member) cannot do this" in response.content.decode()
    assert state() == before
    page = member.get(run_url(done)).content.decode()
    assert "Mark paid" not in page and "data-export" not in page and "Import results" not in page
    assert "Confirm and pay" not in member.get(run_url(run)).content.decode()
    assert "Preview</button>" not in member.get(base(program)).content.decode()


def test_signed_out_requests_go_to_sign_in(program, due):
    run = confirmed(program)
    before = state()

    for url, fields in [(base(program), None), (run_url(run), None), *actions(program, run, payout_of(due[0]))]:
        response = Client().post(url, fields) if fields is not None else Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url
    assert state() == before


def test_another_workspaces_program_is_refused_and_its_ids_are_not_found_here(owner, program, due):
    elsewhere = ProgramFactory()
    their = payable_partner(elsewhere, name="Zed")
    credited(their, elsewhere, amount=10_000)
    their_run = confirmed(elsewhere)
    their_payout = payout_of(their)
    mine = previewed(program)
    before = state()

    # Their program's own pages: the dashboard's 403 for a workspace one is not a member of.
    assert owner.get(base(elsewhere)).status_code == 403
    assert owner.get(run_url(their_run)).status_code == 403
    # Their run and payout ids under this program: not found, exactly like ids that name nothing.
    assert owner.get(f"{base(program)}/runs/{their_run.pk}").status_code == 404
    for url in (
        f"{base(program)}/runs/{their_run.pk}/confirm",
        f"{base(program)}/runs/{their_run.pk}/export/paypal",
        f"{base(program)}/runs/{their_run.pk}/payouts/{their_payout.pk}/paid",
        f"{run_url(mine)}/payouts/{their_payout.pk}/paid",
        f"{run_url(mine)}/payouts/{their_payout.pk}/failed",
    ):
        assert owner.post(url, {"message": "x"}).status_code == 404, url
    assert owner.post(f"{base(program)}/runs/{their_run.pk}/import", upload(b"1,paid,,")).status_code == 404
    assert state() == before


def test_a_run_of_another_program_of_the_workspace_is_not_found_under_this_one(owner, program, due):
    sister = ProgramFactory(workspace=program.workspace)
    theirs = payable_partner(sister, name="Sis")
    credited(theirs, sister, amount=10_000)
    sister_run = confirmed(sister)
    before = state()

    assert owner.get(f"{base(program)}/runs/{sister_run.pk}").status_code == 404
    assert owner.post(f"{base(program)}/runs/{sister_run.pk}/confirm").status_code == 404
    assert owner.post(f"{base(program)}/runs/{sister_run.pk}/export/paypal").status_code == 404
    assert owner.post(f"{base(program)}/runs/{sister_run.pk}/payouts/{payout_of(theirs).pk}/paid").status_code == 404
    assert owner.get(run_url(sister_run)).status_code == 200  # where it belongs
    assert state() == before


@pytest.mark.parametrize(
    "path",
    [
        "/runs/0",
        "/runs/99999999999999999999999",
        "/runs/9223372036854775807",
        "/runs/abc",
        "/runs/1/export/bitcoin",
        "/runs/-1/confirm",
    ],
)
def test_junk_ids_are_not_found(owner, program, due, path):
    confirmed(program)
    response = owner.get(base(program) + path) if path.count("/") == 2 else owner.post(base(program) + path)
    assert response.status_code == 404


def test_a_post_without_the_csrf_token_is_refused(program, due):
    run = previewed(program)
    strict = client_of(program, Role.OWNER, enforce_csrf_checks=True)
    before = state()

    for url, fields in actions(program, run, Payout(pk=1, run=run)):
        assert strict.post(url, fields).status_code == 403, url
    assert state() == before


# --- Bad results files --------------------------------------------------------------------------------------------


@pytest.fixture
def exported(owner, program, due):
    run = confirmed(program)
    owner.post(run_url(run, "export/paypal"))
    owner.post(run_url(run, "export/wise"))
    return run


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00" * (RESULTS_MAX_BYTES + 10), "Nothing imported: The file is larger than 1000 kB: split it."),
        ("1,paid,,caf\u00e9".encode("utf-16"), "Nothing imported: The file is not UTF-8 text (byte 1)"),
        (b'1,paid,"unclosed', "Nothing imported: Line 1 is not CSV (unexpected end of data)"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "Nothing imported: The file is not UTF-8 text (byte 1)"),
    ],
    ids=["huge", "utf-16", "junk-csv", "binary"],
)
def test_a_results_file_that_cannot_be_read_changes_nothing(owner, exported, data, message):
    before = state()

    response = owner.post(run_url(exported, "import"), upload(data))

    assert response.status_code == 302
    assert flashed(response)[-1].startswith(message)
    assert state() == before


def test_junk_lines_are_reported_by_line_and_change_nothing(owner, exported, due):
    before = state()
    data = b"payout_id,status,reference,message\r\nnope,paid,,\r\n=1+1,paid,,\r\n1,maybe,,\r\n"

    response = owner.post(run_url(exported, "import"), upload(data))

    assert flashed(response)[-4:] == [
        "Results imported: 0 marked paid, 0 marked failed, 0 already settled, 3 refused.",
        "Line 2: 'nope' is not a payout id (write 123 or payout-123)",
        "Line 3: '=1+1' is not a payout id (write 123 or payout-123)",
        "Line 4: status 'maybe' is not paid or failed",
    ]
    assert state() == before


def test_an_import_without_a_file_says_so(owner, exported):
    before = state()

    response = owner.post(run_url(exported, "import"), {})

    assert flashed(response)[-1] == payout_views.NO_FILE
    assert state() == before


# --- Cost ---------------------------------------------------------------------------------------------------------


def run_page_queries(client: Client, run) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(run_url(run)).status_code == 200
    return len(queries)


def test_the_run_page_costs_the_same_whatever_the_number_of_payouts(owner, program, due):
    small = confirmed(program)
    for index in range(6):
        partner = payable_partner(program, name=f"More {index}")
        credited(partner, program, amount=10_000)
    large = confirmed(program)
    assert Payout.objects.filter(run=large).count() == 6

    assert run_page_queries(owner, small) == run_page_queries(owner, large) == RUN_PAGE_QUERIES


# Session, user, program, membership (twice, as every program page: the role check, then the role), run, payouts
# with their partners, audit.
RUN_PAGE_QUERIES = 8
