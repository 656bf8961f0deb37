"""Files made to hurt the import (issue 37): a JSON number past Python's int-string limit, an endless file
(/dev/zero), and a document of millions of tiny objects. Each is refused as a file, by the page (400 with its reason,
never a 500) and by `manage.py import` (one line, non-zero exit), and the refusal costs little memory."""

import io
import json
import sys
import tracemalloc
from collections.abc import Iterator
from contextlib import redirect_stderr

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import ManagementUtility
from django.test import Client

from imports.engine import bytes_capped, source_read
from imports.models import ImportUpload
from imports.records import ImportFileError
from programs.models import Role
from tests.factories import MembershipFactory, ProgramFactory

pytestmark = pytest.mark.django_db

LIMIT = sys.get_int_max_str_digits()
HUGE_INT = b'{"data": [\n{"id": "aff-1", "email": "a@example.com"},\n{"id": ' + b"7" * (LIMIT + 1) + b"}\n]}"
HUGE_INT_REASON = f"affiliates.json: not valid JSON (line 3: a number longer than {LIMIT} digits)"
MB = 1024 * 1024


@pytest.fixture
def owner():
    program = ProgramFactory(name="Acme")
    browser = Client()
    browser.force_login(MembershipFactory.create(workspace=program.workspace, role=Role.OWNER).user)
    return browser, program


def upload(browser: Client, program, name: str, content: bytes):
    return browser.post(
        f"/programs/{program.pk}/import", {"platform": "rewardful", "files": [SimpleUploadedFile(name, content)]}
    )


def command(*args: str) -> tuple[int, str]:
    """`manage.py import ...` as run from a shell: its exit status and what it wrote to stderr."""
    stderr = io.StringIO()
    with redirect_stderr(stderr), pytest.raises(SystemExit) as exit_info:
        ManagementUtility(["manage.py", "import", *args]).execute()
    return int(exit_info.value.code or 0), stderr.getvalue()


def test_a_number_past_the_int_limit_is_a_refused_file_on_the_page(owner):
    browser, program = owner
    response = upload(browser, program, "affiliates.json", HUGE_INT)
    assert response.status_code == 400
    assert f"Nothing read: {HUGE_INT_REASON}" in [str(m) for m in get_messages(response.wsgi_request)]
    assert not ImportUpload.objects.exists()


def test_a_number_past_the_int_limit_is_one_line_from_the_command(owner, tmp_path):
    _, program = owner
    path = tmp_path / "affiliates.json"
    path.write_bytes(HUGE_INT)
    status, stderr = command("rewardful", str(path), "--program", str(program.pk), "--dry-run")
    assert status != 0
    assert stderr == f"CommandError: {HUGE_INT_REASON}\n"


def test_an_epoch_too_large_for_a_date_refuses_its_row_not_the_import():
    # PartnerStack's times are epoch milliseconds; one of 400 digits cannot even be divided into a float.
    partnerships = {
        "data": {
            "items": [
                {
                    "key": "part_1",
                    "partner_key": "alice",
                    "email": "alice@example.com",
                    "first_name": "Alice",
                    "created_at": int("9" * 400),
                }
            ]
        }
    }
    source = source_read("partnerstack", [("partnerships.json", json.dumps(partnerships).encode())])
    assert (source.refusals[0].where, source.refusals[0].reason) == (
        "partnerships.json item 1",
        f"time {int('9' * 400)!r} is not a date and time",
    )


def endless_zeros() -> Iterator[bytes]:
    while True:
        yield b"\x00" * 65536


def test_an_endless_source_is_read_only_to_the_cap():
    assert bytes_capped(endless_zeros(), limit=MB) is None
    assert bytes_capped(iter([b"ab", b"cd"]), limit=4) == b"abcd"
    assert bytes_capped(iter([b"ab", b"cde"]), limit=4) is None


def test_the_command_refuses_dev_zero_at_the_cap(owner, settings):
    _, program = owner
    settings.IMPORT_UPLOAD_MAX_BYTES = 2 * MB
    status, stderr = command("rewardful", "/dev/zero", "--program", str(program.pk), "--dry-run")
    assert status != 0
    assert stderr == (
        "CommandError: /dev/zero: the files are larger than 2,097,152 bytes together (IMPORT_UPLOAD_MAX_BYTES)\n"
    )


def test_the_command_caps_the_files_together(owner, settings, tmp_path):
    _, program = owner
    settings.IMPORT_UPLOAD_MAX_BYTES = 1024
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_bytes(b"[" + b" " * 600 + b"]")
    second.write_bytes(b"[" + b" " * 600 + b"]")
    status, stderr = command("rewardful", str(first), str(second), "--program", str(program.pk), "--dry-run")
    assert status != 0 and stderr.startswith(f"CommandError: {second}: the files are larger than 1,024 bytes")


def empty_objects(count: int) -> bytes:
    return b'{"data":[' + b"{}," * (count - 1) + b"{}]}"


def test_45_mb_of_empty_objects_is_refused_before_it_is_parsed(owner):
    """The attack's file: 15.7 million `{}`. Refused without parsing, the refusal's peak under 1 MiB beyond the
    file itself (the parse it replaces held ~1.2 GB)."""
    content = empty_objects(45 * MB // 3)
    tracemalloc.start()
    try:
        with pytest.raises(ImportFileError) as refused:
            source_read("rewardful", [("affiliates.json", content)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.message == (
        "affiliates.json: too many values to import at once "
        "(more than 2,500,000 JSON values or CSV fields in the files together)"
    )
    assert peak < MB


def test_45_mb_of_empty_objects_is_refused_on_the_page(owner):
    browser, program = owner
    response = upload(browser, program, "affiliates.json", empty_objects(45 * MB // 3))
    assert response.status_code == 400
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Nothing read: affiliates.json: too many values to import at once "
        "(more than 2,500,000 JSON values or CSV fields in the files together)"
    ]


# What a read costs per value at its peak (tracemalloc, 100,000 values): ~38 bytes for `{},`, ~34 for `[],`, ~106
# for an object of distinct keys, ~150 for two-field CSV rows, and ~147 for a real Rewardful affiliates export (~25
# bytes of JSON a value, held at ~6x). So IMPORT_MAX_VALUES' default (2.5 million) keeps one read under ~500 MB,
# what a real 50 MB export takes anyway.
BYTES_PER_VALUE = 200


UNDER = 100_000 // 2 - 1  # items that make just under 100,000 values, as values_at_most counts them


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(empty_objects(UNDER), id="empty-objects"),
        pytest.param(b"[" + b"[]," * (UNDER - 1) + b"[]]", id="empty-lists"),
        pytest.param(b"{" + b",".join(b'"k%d":{}' % n for n in range(UNDER)) + b"}", id="distinct-keys"),
        pytest.param(b"a,b\n" + b"x,y\n" * (UNDER - 1), id="csv-fields"),
    ],
)
def test_a_file_just_under_the_bound_is_read_within_its_memory_bound(settings, content):
    settings.IMPORT_MAX_VALUES = 100_000
    tracemalloc.start()
    try:
        try:
            source_read("rewardful", [("affiliates.json", content)])
        except ImportFileError as error:  # read whole, then refused for what it holds: not an export
            assert "too many values" not in error.message
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < settings.IMPORT_MAX_VALUES * BYTES_PER_VALUE


def test_the_bound_counts_all_the_files_together(settings):
    settings.IMPORT_MAX_VALUES = 1000
    part = empty_objects(300)  # 600 values at most: one file is read, the second passes the bound
    with pytest.raises(ImportFileError, match=r"^b\.json: too many values to import at once \(more than 1,000 "):
        source_read("rewardful", [("a.json", part), ("b.json", part)])
