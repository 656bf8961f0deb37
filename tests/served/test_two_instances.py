"""Two server instances behind HAProxy, as deploy/compose.yaml lays them out: gunicorn with config/gunicorn.conf.py,
2 workers and an INSTANCE_ID each, one signing key, TRUSTED_PROXY_COUNT=1, on the pytest test database and one
Redis, with a real Celery worker; the proxy runs deploy/haproxy.cfg itself (tests/proxy.py). Through it, and
straight to each instance: a dashboard session holds on both, rate limits count per instance (or across both with
RATELIMIT_SHARED=true) by the client's address, and a sale and its refunds answered by different instances leave
one commission and a ledger that adds up, also when they race."""

import os
import re
import secrets
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from commissions.calculations import round_half_up
from commissions.models import Commission, LedgerEntry, Notification, NotificationOutbox
from programs.models import Program, Role
from tests.factories import CustomerFactory, MembershipFactory, ProgramFactory, ReferralLinkFactory, UserFactory
from tests.gunicorn import gunicorn_serving
from tests.helpers import assert_rate_limited, run_together
from tests.proxy import all_entered, haproxy_binary, haproxy_serving
from tests.worker import celery_worker_running, wait_for

from .conftest import _test_database_url, loopback_with_a_full_window, send_concurrently, sign_in

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

WORKERS = 2
CLICK = "/api/v1/track/click"
CLICK_LIMIT = 60  # per minute per IP (the spec's table)


@dataclass
class Instance:
    url: str
    log: Path

    def answered(self, method: str, target: str) -> int:
        """Requests for exactly `target` (path and query) in this instance's access log."""
        line = re.compile(rf'^<\d+> \d+ "{method} {re.escape(target)} ')
        return sum(1 for text in self.log.read_text().splitlines() if line.match(text))


@dataclass
class Layout:
    proxy: str
    instances: tuple[Instance, Instance]

    def answers(self, method: str, target: str, *, total: int) -> tuple[int, ...]:
        """How many requests for `target` each instance answered, once `total` are logged (gunicorn logs a
        request just after its client has the response) or after a few seconds."""

        def counts() -> tuple[int, ...]:
            return tuple(instance.answered(method, target) for instance in self.instances)

        wait_for(lambda: sum(counts()) >= total, timeout=5)
        return counts()


@contextmanager
def two_instances_behind_haproxy(directory: Path, *, ratelimit_shared: bool, celery_worker: bool) -> Iterator[Layout]:
    """Two instances (and the Celery worker they send tasks to, if asked), started side by side, then HAProxy."""
    haproxy_binary()  # before anything starts: skip or fail at once without it
    redis_url = os.environ["REDIS_URL"]  # the `worker` marker skips these tests without it
    database_url = _test_database_url()
    queue = f"test-{uuid.uuid4().hex[:8]}"
    common = {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "DEBUG": "true",
        # What docs/deploy.md requires of every instance: one signing key, the proxy trusted for one hop.
        "SECRET_KEY": secrets.token_urlsafe(40),
        "TRUSTED_PROXY_COUNT": "1",
        "RATELIMIT_SHARED": "true" if ratelimit_shared else "false",
        "RATELIMIT_ENABLE": "true",
        "RATELIMIT_SCALE": "1",
        "PUBLIC_BASE_URL": "",
        "CELERY_TASK_ALWAYS_EAGER": "false" if celery_worker else "true",
        "CELERY_QUEUE": queue,
        # The test process stores users with the fast test hasher.
        "FAST_PASSWORD_HASHER": "true",
    }
    access_log_format = ("--access-logformat", '%(p)s %(s)s "%(r)s"')
    run = secrets.token_hex(4)  # fresh instance ids: no count left in Redis by an earlier run
    logs = [directory / f"gunicorn-{name}.log" for name in ("a", "b")]
    servers = [
        gunicorn_serving(
            env={**common, "INSTANCE_ID": f"web-{name}-{run}"}, log=log, workers=WORKERS, extra_args=access_log_format
        )
        for name, log in zip(("a", "b"), logs, strict=True)
    ]
    workers = [celery_worker_running(queue=queue, database_url=database_url, redis_url=redis_url)] * celery_worker
    with all_entered(*servers, *workers) as (url_a, url_b, *_):
        with haproxy_serving(app_urls=(url_a, url_b), log=directory / "haproxy.log") as proxy:
            yield Layout(proxy=proxy, instances=(Instance(url_a, logs[0]), Instance(url_b, logs[1])))


@pytest.fixture(scope="module")
def layout(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Layout]:
    """Rate limits per instance; a real worker takes the refund notifications the instances send."""
    with django_db_blocker.unblock():
        directory = tmp_path_factory.mktemp("two-instances")
        with two_instances_behind_haproxy(directory, ratelimit_shared=False, celery_worker=True) as started:
            yield started


@pytest.fixture(scope="module")
def shared_layout(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Layout]:
    # Shared counts live under one fixed prefix: none may be left from an earlier run in the same minute.
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    for key in client.scan_iter("ratelimit:shared:*"):
        client.delete(key)
    with django_db_blocker.unblock():
        directory = tmp_path_factory.mktemp("two-instances-shared")
        with two_instances_behind_haproxy(directory, ratelimit_shared=True, celery_worker=False) as started:
            yield started


# --- sessions ---------------------------------------------------------------------------------------------------


def test_a_dashboard_session_made_on_one_instance_holds_on_the_other_and_through_the_proxy(layout):
    user = UserFactory(username="owner")
    program = ProgramFactory(workspace=MembershipFactory(user=user, role=Role.OWNER).workspace)
    path = f"/api/tracking/status/{program.pk}"
    a, b = layout.instances

    with httpx.Client(base_url=a.url, timeout=15) as on_a:
        sign_in(on_a, "owner")
        cookies = on_a.cookies
    with httpx.Client(base_url=b.url, cookies=cookies, timeout=15) as on_b:
        assert on_b.get(path).status_code == 200
    proxied_path = f"/api/tracking/performance/{program.pk}"
    with httpx.Client(base_url=layout.proxy, cookies=cookies, timeout=15) as proxied:
        assert [proxied.get(proxied_path).status_code for _ in range(4)] == [200] * 4
    assert layout.answers("GET", proxied_path, total=4) == (2, 2)  # round robin
    with httpx.Client(base_url=b.url, timeout=15) as anonymous:
        assert anonymous.get(path).status_code in (401, 403)


def test_a_sign_in_through_the_proxy_holds_on_each_instance(layout):
    user = UserFactory(username="owner")
    program = ProgramFactory(workspace=MembershipFactory(user=user, role=Role.OWNER).workspace)
    path = f"/api/tracking/events/{program.pk}"

    with httpx.Client(base_url=layout.proxy, timeout=15) as browser:
        # The form, the post and the page it lands on: round robin spreads them over both instances.
        sign_in(browser, "owner")
        cookies = browser.cookies
    for instance in layout.instances:
        with httpx.Client(base_url=instance.url, cookies=cookies, timeout=15) as direct:
            assert direct.get(path).status_code == 200


# --- rate limits ------------------------------------------------------------------------------------------------


def _clicks(
    base_url: str, address: str, count: int, *, target: str = CLICK, forged_forwarded_for: bool = True
) -> list[httpx.Response]:
    """`count` clicks sent at once from `address`, by default each with an X-Forwarded-For of the client's own
    making, which must not count: HAProxy appends the address it saw and TRUSTED_PROXY_COUNT=1 takes that one.
    Straight to an instance no proxy appends, so an instance trusts a forged value (in production only the proxy
    reaches them); without one it falls back to REMOTE_ADDR."""
    program = ProgramFactory.create()
    link = ReferralLinkFactory.create(program=program)
    body = {"affiliate_url": f"https://{program.domain}/?aff={link.short_link}"}
    transport = httpx.HTTPTransport(local_address=address)
    with httpx.Client(base_url=base_url, transport=transport, timeout=15) as client:
        return send_concurrently(
            lambda n: client.post(
                target,
                json=body,
                headers={"X-Forwarded-For": f"203.0.113.{n % 250 + 1}"} if forged_forwarded_for else {},
            ),
            count,
        )


def _statuses(responses: list[httpx.Response]) -> Counter[int]:
    return Counter(response.status_code for response in responses)


def test_rate_limits_count_per_instance_by_the_address_the_proxy_saw(layout):
    address = loopback_with_a_full_window()
    target = f"{CLICK}?probe={uuid.uuid4().hex}"  # tells this test's calls apart in the access logs

    # Round robin: each instance answers 60, each within its own limit.
    assert _statuses(_clicks(layout.proxy, address, 2 * CLICK_LIMIT, target=target)) == {200: 2 * CLICK_LIMIT}
    assert layout.answers("POST", target, total=2 * CLICK_LIMIT) == (CLICK_LIMIT, CLICK_LIMIT)

    # Both counts are spent: the next call is refused whichever instance answers, through the proxy or not.
    for _ in range(2):
        [refused] = _clicks(layout.proxy, address, 1)
        assert_rate_limited(refused)
    for instance in layout.instances:
        [refused] = _clicks(instance.url, address, 1, forged_forwarded_for=False)
        assert_rate_limited(refused)
    # Another client behind the same proxy has its own count.
    assert _statuses(_clicks(layout.proxy, loopback_with_a_full_window(), 2)) == {200: 2}


def test_with_ratelimit_shared_the_61st_call_is_refused_whichever_instance_serves_it(shared_layout):
    address = loopback_with_a_full_window()
    target = f"{CLICK}?probe={uuid.uuid4().hex}"

    responses = _clicks(shared_layout.proxy, address, CLICK_LIMIT + 1, target=target)

    assert _statuses(responses) == {200: CLICK_LIMIT, 429: 1}
    assert_rate_limited(next(response for response in responses if response.status_code == 429))
    assert sorted(shared_layout.answers("POST", target, total=CLICK_LIMIT + 1)) == [
        CLICK_LIMIT // 2,
        CLICK_LIMIT // 2 + 1,
    ]
    for instance in shared_layout.instances:
        [refused] = _clicks(instance.url, address, 1, forged_forwarded_for=False)
        assert_rate_limited(refused)


# --- a sale on one instance, its refunds on the other -----------------------------------------------------------

SALE_CENTS = 10000
COMMISSION_CENTS = 2000  # 20 %


def _program_with_a_customer() -> Program:
    """20 % commissions credited at once (no hold), and a clicked customer `user-1` to attribute sales to."""
    program = ProgramFactory.create(commission_type="percent", commission_rate=Decimal("20"), hold_days=0)
    CustomerFactory(link=ReferralLinkFactory(program=program), customer_key="user-1")
    return program


def _post(base_url: str, key: str, path: str, body: dict[str, Any]) -> httpx.Response:
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
        return client.post(path, json=body)


def _assert_one_consistent_commission(transaction_id: str, *, refunded: int) -> Commission:
    """One commission for the sale; its deduction is the spec's cumulative arithmetic; its ledger adds up."""
    [commission] = Commission.objects.filter(sale__processor_event_id=transaction_id)
    full = refunded >= SALE_CENTS
    deducted = COMMISSION_CENTS if full else round_half_up(Decimal(COMMISSION_CENTS) * refunded / SALE_CENTS)
    status = "reversed" if full else ("refunded" if refunded else "approved")
    assert (commission.amount_cents, commission.sale_refunded_cents, commission.deducted_cents) == (
        COMMISSION_CENTS,
        refunded,
        deducted,
    )
    assert commission.status == status and commission.credited
    entries = list(LedgerEntry.objects.filter(commission=commission).values_list("kind", "amount_cents"))
    assert [amount for kind, amount in entries if kind == "credit"] == [COMMISSION_CENTS]
    assert sum(amount for kind, amount in entries if kind == "deduction") == -deducted
    assert sum(amount for _, amount in entries) == COMMISSION_CENTS - deducted
    return commission


def _assert_the_worker_notified_once_per_refund(commission: Commission, *, refunds: int) -> None:
    """Each applied refund wrote one outbox row, and the worker delivered each as one partner notice. Waiting
    for it also keeps the worker's writes out of the test database's flush after the test."""

    def delivered() -> tuple[int, int, int]:
        outbox = NotificationOutbox.objects.filter(commission=commission)
        notices = Notification.objects.filter(commission=commission, audience="partner")
        return outbox.count(), outbox.filter(delivered_at__isnull=False).count(), notices.count()

    wait_for(lambda: delivered() == (refunds,) * 3)
    assert delivered() == (refunds,) * 3, "(outbox rows, delivered, partner notices)"


def test_a_sale_on_one_instance_and_its_refunds_on_the_other_leave_one_consistent_commission(layout):
    program = _program_with_a_customer()
    key = program.raw_api_key
    a, b = layout.instances

    body = {"transaction_id": "txn-1", "amount_cents": SALE_CENTS, "customer_key": "user-1"}
    sale = _post(a.url, key, "/api/v1/track/sale", body)
    assert sale.status_code == 200, sale.text
    assert _post(b.url, key, "/api/v1/track/sale", body).status_code == 409

    partial = {"transaction_id": "txn-1", "refund_amount_cents": 2500, "refund_id": "re-1", "refund_reason": "broken"}
    first = _post(b.url, key, "/api/v1/track/refund", partial)
    assert (first.status_code, first.json()["status"], first.json()["deductionAmount"]) == (200, "refunded", 500)
    assert _post(a.url, key, "/api/v1/track/refund", partial).json()["status"] == "skipped"
    _assert_one_consistent_commission("txn-1", refunded=2500)

    rest = _post(layout.proxy, key, "/api/v1/track/refund", {"transaction_id": "txn-1", "refund_id": "re-2"})
    assert (rest.json()["status"], rest.json()["deductionAmount"]) == ("reversed", 1500)
    commission = _assert_one_consistent_commission("txn-1", refunded=SALE_CENTS)
    assert commission.pk == sale.json()["commission_id"]
    _assert_the_worker_notified_once_per_refund(commission, refunds=2)


def test_a_sale_and_its_refunds_racing_through_the_proxy_leave_one_consistent_commission(layout):
    program = _program_with_a_customer()
    key = program.raw_api_key
    sale = {"transaction_id": "txn-race", "amount_cents": SALE_CENTS, "customer_key": "user-1"}
    refunds = [
        {"transaction_id": "txn-race", "refund_amount_cents": 1000 + 250 * n, "refund_id": f"re-{n}"} for n in range(3)
    ]
    # The sale twice and each refund twice, all at once; round robin spreads them over both instances.
    calls = [("/api/v1/track/sale", sale)] * 2 + [("/api/v1/track/refund", body) for body in refunds for _ in range(2)]

    responses = run_together(len(calls), lambda n: _post(layout.proxy, key, *calls[n]))

    sale_statuses = sorted(response.status_code for response in responses[:2])
    assert sale_statuses == [200, 409]
    applied: dict[str, int] = {}
    for (_, body), response in zip(calls[2:], responses[2:], strict=True):
        # A refund that arrived before the sale committed finds none; a repeat of an applied one is skipped.
        assert response.status_code in (200, 404), response.text
        if response.status_code == 200 and response.json()["status"] == "refunded":
            assert body["refund_id"] not in applied, "one refund id applied twice"
            applied[body["refund_id"]] = body["refund_amount_cents"]
    _assert_one_consistent_commission("txn-race", refunded=sum(applied.values()))

    # Sent again one by one, every refund is applied exactly once in all.
    for body in refunds:
        assert _post(layout.proxy, key, "/api/v1/track/refund", body).status_code == 200
    commission = _assert_one_consistent_commission(
        "txn-race", refunded=sum(body["refund_amount_cents"] for body in refunds)
    )
    _assert_the_worker_notified_once_per_refund(commission, refunds=len(refunds))
