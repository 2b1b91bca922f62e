"""Approval webhooks against a real local HTTP server: signed body, retries, failures kept."""

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone
from django_q.models import OrmQ, Schedule

from orgmemory.models import WebhookDelivery
from orgmemory.services.approvals import approval_decide, approval_request
from orgmemory.services.webhooks import (
    MAX_ATTEMPTS,
    SIGNATURE_HEADER,
    WEBHOOK_POLICY,
    webhook_configure,
    webhook_deliver,
)
from persistence.principal import Principal
from tests.persistence.factories import MembershipFactory
from tests.support.webhook_receiver import Receiver

pytestmark = pytest.mark.django_db

SECRET = "whsec-test-123"


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _item(company):
    return approval_request(
        company=company,
        action_type="deploy:production",
        title="Deploy billing v2",
        risk_level="high",
        source="api",
        requested_by="release-bot",
    )


def test_pending_and_decided_events_are_signed_and_delivered(
    company, receiver, django_capture_on_commit_callbacks
):
    webhook_configure(company=company, url=receiver.url, secret=SECRET, principal=None)
    membership = MembershipFactory(company=company, role="operator", user__password=None)
    with django_capture_on_commit_callbacks(execute=True):
        item = _item(company)
    # enqueued on commit through the q2 ORM broker, not delivered inside the request, on the
    # default cluster's queue (a hanging LLM holds only the LLM cluster's workers)
    assert OrmQ.objects.count() == 1
    assert OrmQ.objects.get().key == "synthorg"
    assert receiver.requests == []
    with django_capture_on_commit_callbacks(execute=True):
        approval_decide(
            company=company,
            actor=Principal.for_human(membership.user, company, "operator"),
            item_id=item.pk,
            decision="approve",
        )
    for delivery in WebhookDelivery.objects.order_by("created_at"):
        webhook_deliver(delivery_id=delivery.pk)
    assert len(receiver.requests) == 2
    events = []
    for headers, body in receiver.requests:
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert headers[SIGNATURE_HEADER] == expected
        assert headers["Content-Type"] == "application/json"
        payload = json.loads(body)
        events.append((payload["event"], payload["item"]["status"], payload["item"]["id"]))
    assert events == [
        ("approval.pending", "pending", str(item.pk)),
        ("approval.approved", "approved", str(item.pk)),
    ]
    assert set(WebhookDelivery.objects.values_list("status", "attempts", "response_status")) == {
        ("delivered", 1, 200)
    }


def test_a_tampered_body_does_not_verify(company, receiver):
    webhook_configure(company=company, url=receiver.url, secret=SECRET, principal=None)
    delivery = _item(company).webhook_deliveries.get()
    webhook_deliver(delivery_id=delivery.pk)
    headers, body = receiver.requests[0]
    tampered = body.replace(b"high", b"low!")
    forged = "sha256=" + hmac.new(SECRET.encode(), tampered, hashlib.sha256).hexdigest()
    assert headers[SIGNATURE_HEADER] != forged
    wrong_secret = "sha256=" + hmac.new(b"other", body, hashlib.sha256).hexdigest()
    assert headers[SIGNATURE_HEADER] != wrong_secret


def test_failures_are_recorded_retried_then_given_up(company, receiver):
    receiver.status = 503
    webhook_configure(company=company, url=receiver.url, secret=SECRET, principal=None)
    item = _item(company)
    delivery = item.webhook_deliveries.get()
    webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("pending", 1, 503)
    assert delivery.reason == "HTTP 503"  # the status, never the answer's body
    retry = Schedule.objects.get(func="orgmemory.tasks.deliver_webhook")
    assert retry.schedule_type == Schedule.ONCE
    assert (
        abs((retry.next_run - delivery.last_attempt_at) - WEBHOOK_POLICY.delay(1)).total_seconds()
        < 1
    )
    for _ in range(MAX_ATTEMPTS - 1):
        webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", MAX_ATTEMPTS)
    assert len(receiver.requests) == MAX_ATTEMPTS
    assert webhook_deliver(delivery_id=delivery.pk) is None  # given up: no more attempts
    assert item.status == "pending"  # the item itself never depended on delivery


def test_a_dead_endpoint_never_blocks_the_request(company):
    webhook_configure(company=company, url="http://127.0.0.1:9/hook", secret=SECRET, principal=None)
    item = _item(company)
    assert item.status == "pending"
    delivery = item.webhook_deliveries.get()
    webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == "pending"
    assert delivery.reason == "The endpoint could not be reached."
    assert delivery.last_attempt_at <= timezone.now()


def test_retry_backoff():
    assert [WEBHOOK_POLICY.delay(n).total_seconds() for n in (1, 2, 3, 4)] == [
        30,
        120,
        480,
        1920,
    ]


def test_admin_saves_the_webhook_through_the_service(company, client):
    from orgmemory.models import ApprovalWebhook

    membership = MembershipFactory(
        company=company, role="admin", user__password=None, user__is_staff=True
    )
    from django.contrib.auth.models import Permission

    membership.user.user_permissions.add(
        *Permission.objects.filter(codename__endswith="approvalwebhook")
    )
    client.force_login(membership.user)
    response = client.post(
        "/admin/orgmemory/approvalwebhook/add/",
        {
            "company": company.pk,
            "url": "https://hooks.example.com/x",
            "secret": "s",
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content[:500]
    hook = ApprovalWebhook.objects.get(company=company)
    assert (hook.url, hook.secret, hook.enabled) == ("https://hooks.example.com/x", "s", True)
    assert hook.updated_at is not None


@pytest.mark.django_db(transaction=True)
def test_the_http_call_holds_no_row_lock_and_no_transaction(company):
    """While the endpoint is answering, another connection can lock the delivery row at once
    (nothing is held across the call), and sees the attempt already claimed."""
    seen = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            from django.db import connection, transaction

            try:
                with transaction.atomic():
                    row = (
                        WebhookDelivery.objects.select_for_update(nowait=True)
                        .filter(pk=seen["id"])
                        .values("attempts", "claimed_until", "status")
                        .get()
                    )
                seen["row"] = row
            except Exception as exc:  # a held lock: "could not obtain lock on row"
                seen["error"] = repr(exc)
            finally:
                connection.close()
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        webhook_configure(company=company, url=url, secret=SECRET, principal=None)
        delivery = _item(company).webhook_deliveries.get()
        seen["id"] = delivery.pk
        webhook_deliver(delivery_id=delivery.pk)
    finally:
        server.shutdown()
        server.server_close()
    assert "error" not in seen, seen.get("error")
    assert seen["row"]["attempts"] == 1 and seen["row"]["status"] == "sending"
    assert seen["row"]["claimed_until"] is not None  # the lease, visible to other workers
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("delivered", 1, 204)
    assert delivery.claimed_until is None and delivery.next_attempt_at is None


def test_a_slow_drip_endpoint_is_cut_off_at_the_total_budget(company, monkeypatch):
    """An endpoint that answers 200 and then trickles its body forever does not hold the
    worker: the attempt ends at TOTAL_SECONDS with the status it got."""
    from orgmemory.services import webhooks

    monkeypatch.setattr(webhooks, "TOTAL_SECONDS", 0.3)
    stop = threading.Event()
    finished = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(100):  # 5 s of drip at most, then the endpoint gives up
                    if stop.wait(0.05):
                        return
                    self.wfile.write(b"x")
                    self.wfile.flush()
            except OSError:
                return  # the client hung up: what we expect
            finished.append(True)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    try:
        webhook_configure(
            company=company,
            url=f"http://127.0.0.1:{server.server_address[1]}/",
            secret=SECRET,
            principal=None,
        )
        delivery = _item(company).webhook_deliveries.get()
        webhook_deliver(delivery_id=delivery.pk)
        assert finished == []  # returned while the endpoint was still dripping
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.response_status) == ("delivered", 200)


def test_the_sweeper_delivers_lost_and_abandoned_attempts_only(company, receiver):
    from datetime import timedelta

    from orgmemory.services.webhooks import SWEEP_GRACE, WEBHOOK_JOB
    from synthorg.jobs.dispatch import jobs_run_due

    webhook_configure(company=company, url=receiver.url, secret=SECRET, principal=None)
    now = timezone.now()
    lost, abandoned, leased, not_due, done = (
        _item(company).webhook_deliveries.get() for _ in range(5)
    )
    overdue = now - SWEEP_GRACE - timedelta(seconds=1)
    WebhookDelivery.objects.filter(pk=lost.pk).update(next_attempt_at=overdue)
    # an attempt in flight is ``sending`` under its lease (the abandoned one's has passed)
    WebhookDelivery.objects.filter(pk=abandoned.pk).update(
        status="sending", attempts=1, claimed_until=now - timedelta(seconds=1)
    )
    WebhookDelivery.objects.filter(pk=leased.pk).update(
        status="sending", attempts=1, claimed_until=now + timedelta(seconds=30)
    )
    WebhookDelivery.objects.filter(pk=not_due.pk).update(next_attempt_at=now)
    WebhookDelivery.objects.filter(pk=done.pk).update(
        next_attempt_at=None, status="delivered", delivered_at=now, attempts=1
    )
    assert jobs_run_due(WEBHOOK_JOB, now=now).retried == 2
    states = {d.pk: (d.status, d.attempts) for d in WebhookDelivery.objects.filter(company=company)}
    assert states == {
        lost.pk: ("delivered", 1),
        abandoned.pk: ("delivered", 2),
        leased.pk: ("sending", 1),
        not_due.pk: ("pending", 0),
        done.pk: ("delivered", 1),
    }
    assert len(receiver.requests) == 2
    assert {json.loads(body)["item"]["id"] for _, body in receiver.requests} == {
        str(lost.item_id),
        str(abandoned.item_id),
    }


def test_a_leased_delivery_is_not_attempted_twice(company, receiver):
    from datetime import timedelta

    webhook_configure(company=company, url=receiver.url, secret=SECRET, principal=None)
    delivery = _item(company).webhook_deliveries.get()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status="sending", claimed_until=timezone.now() + timedelta(seconds=30)
    )
    assert webhook_deliver(delivery_id=delivery.pk) is None
    assert receiver.requests == []
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("sending", 0)


# --- outbound safety (issue 22, findings 3) ------------------------------------------------

SSRF_WEBHOOK_URLS = [
    "http://127.0.0.1:8000/admin/",
    "http://127.1/",
    "http://0x7f000001/",
    "http://2130706433/",
    "http://0.0.0.0/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://10.0.0.1/",
    "http://192.168.1.1/",
    "http://172.16.0.1/",
    "http://100.64.0.1/",
    "http://localhost:5432/",
    "file:///etc/passwd",
    "gopher://127.0.0.1:6379/_INFO",
]


@pytest.mark.parametrize("url", SSRF_WEBHOOK_URLS)
def test_an_internal_webhook_url_is_refused_when_configured(company, settings, url):
    from orgmemory.models import ApprovalWebhook
    from synthorg.errors import InvalidInputError

    settings.SYNTHORG_OUTBOUND_ALLOW = ""
    with pytest.raises(InvalidInputError) as caught:
        webhook_configure(company=company, url=url, secret=SECRET, principal=None)
    assert caught.value.code == "outbound_url_refused"
    [error] = caught.value.errors
    assert error["field"] == "url"
    assert error["code"] == "outbound_url_refused"
    assert "refused" in error["message"] or "must be an http" in error["message"]
    assert not ApprovalWebhook.objects.filter(company=company).exists()


def test_a_webhook_whose_name_now_resolves_inside_is_refused_at_delivery(
    company, receiver, settings, monkeypatch
):
    """DNS rebinding: configured under a name, delivered to whatever the name resolves to
    when the attempt connects — here 127.0.0.1, which is refused; nothing is sent."""
    from synthorg import outbound

    settings.SYNTHORG_OUTBOUND_ALLOW = ""
    port = receiver.server.server_address[1]
    webhook_configure(
        company=company, url=f"http://hooks.example.com:{port}/hook", secret=SECRET, principal=None
    )
    monkeypatch.setattr(outbound, "system_resolver", lambda host, port: ["127.0.0.1"])
    delivery = _item(company).webhook_deliveries.get()
    webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert receiver.requests == []
    assert (delivery.status, delivery.response_status, delivery.reason) == (
        "pending",
        None,
        "The webhook URL is refused by the server's outbound policy.",
    )


def test_no_answer_body_or_connection_error_reaches_members(company, settings):
    """Finding 3: the first 200 bytes of each answer were shown to every member."""
    from django.test import Client

    from orgmemory.services.approvals import approval_request

    class Leaky(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"AKIA-INTERNAL-SECRET root:x:0:0")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Leaky)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        webhook_configure(company=company, url=url, secret=SECRET, principal=None)
        item = approval_request(
            company=company,
            action_type="deploy:production",
            title="Deploy",
            risk_level="high",
            source="api",
            requested_by="bot",
        )
        delivery = item.webhook_deliveries.get()
        webhook_deliver(delivery_id=delivery.pk)
    finally:
        server.shutdown()
        server.server_close()
    delivery.refresh_from_db()
    assert (delivery.response_status, delivery.reason) == (500, "HTTP 500")
    viewer = MembershipFactory(company=company, role="viewer", user__password=None)
    client = Client()
    client.force_login(viewer.user)
    for page in ("/console/inbox/", f"/console/inbox/items/{item.pk}"):
        response = client.get(page)
        assert response.status_code == 200
        assert b"HTTP 500" in response.content
        assert b"AKIA-INTERNAL-SECRET" not in response.content


def test_old_deliveries_are_scrubbed_by_the_migration(company):
    import importlib

    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    migration = importlib.import_module("orgmemory.migrations.0007_webhook_delivery_no_bodies")
    # the models as that migration knew them (``last_error`` is the delivery's ``reason`` now)
    apps = (
        MigrationLoader(connection)
        .project_state(("orgmemory", "0007_webhook_delivery_no_bodies"))
        .apps
    )
    webhook_configure(company=company, url="http://127.0.0.1:9/", secret=SECRET, principal=None)
    first, second = _item(company), _item(company)
    WebhookDelivery.objects.filter(item=first).update(
        response_status=500, reason="HTTP 500: AKIA-INTERNAL-SECRET"
    )
    WebhookDelivery.objects.filter(item=second).update(
        reason="ConnectError: [Errno 111] Connection refused"
    )
    migration.scrub(apps, None)
    assert set(WebhookDelivery.objects.values_list("reason", flat=True)) == {
        "HTTP 500",
        "The endpoint could not be reached.",
    }


@pytest.mark.parametrize("role", ["operator", "viewer"])
def test_only_company_admins_set_the_webhook(company, role):
    from orgmemory.models import ApprovalWebhook
    from synthorg.errors import AccessDeniedError

    membership = MembershipFactory(company=company, role=role)
    principal = Principal(company=company, user=membership.user, role=role)
    with pytest.raises(AccessDeniedError):
        webhook_configure(
            company=company, url="https://hooks.example.com/x", secret=SECRET, principal=principal
        )
    assert not ApprovalWebhook.objects.filter(company=company).exists()


def test_an_operator_cannot_set_the_webhook_in_the_admin(company, client):
    from django.contrib.auth.models import Permission

    from orgmemory.models import ApprovalWebhook

    membership = MembershipFactory(
        company=company, role="operator", user__password=None, user__is_staff=True
    )
    membership.user.user_permissions.add(
        *Permission.objects.filter(codename__endswith="approvalwebhook")
    )
    client.force_login(membership.user)
    response = client.post(
        "/admin/orgmemory/approvalwebhook/add/",
        {
            "company": company.pk,
            "url": "https://hooks.example.com/x",
            "secret": "s",
            "enabled": "on",
        },
    )
    assert response.status_code == 302
    assert not ApprovalWebhook.objects.filter(company=company).exists()


def test_the_admin_form_names_the_refused_url(company, client, settings):
    from django.contrib.auth.models import Permission

    from orgmemory.models import ApprovalWebhook

    settings.SYNTHORG_OUTBOUND_ALLOW = ""
    membership = MembershipFactory(
        company=company, role="admin", user__password=None, user__is_staff=True
    )
    membership.user.user_permissions.add(
        *Permission.objects.filter(codename__endswith="approvalwebhook")
    )
    client.force_login(membership.user)
    response = client.post(
        "/admin/orgmemory/approvalwebhook/add/",
        {"company": company.pk, "url": "http://169.254.169.254/", "secret": "s", "enabled": "on"},
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["url"] == [
        "'169.254.169.254' is refused: it is a link-local address (cloud metadata lives here). "
        "The server operator may allow-list a host or range with SYNTHORG_OUTBOUND_ALLOW"
    ]
    assert not ApprovalWebhook.objects.filter(company=company).exists()


# --- a durable job (issue 34) -----------------------------------------------------------------


def test_a_retry_goes_to_the_url_the_admin_set_meanwhile(company, receiver):
    """Regression: retries kept POSTing to the URL stored when the item was created."""
    other = Receiver()
    try:
        receiver.status = 503
        webhook_configure(company=company, url=receiver.url, secret=SECRET, principal=None)
        delivery = _item(company).webhook_deliveries.get()
        webhook_deliver(delivery_id=delivery.pk)
        webhook_configure(company=company, url=other.url, secret="whsec-new", principal=None)
        webhook_deliver(delivery_id=delivery.pk)
        assert len(receiver.requests) == 1
        assert len(other.requests) == 1
        headers, body = other.requests[0]
        assert headers[SIGNATURE_HEADER] == (
            "sha256=" + hmac.new(b"whsec-new", body, hashlib.sha256).hexdigest()
        )
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.url) == ("delivered", 2, other.url)
    finally:
        other.close()


def test_a_retry_after_the_webhook_was_deleted_stops_with_the_reason(company, receiver):
    from orgmemory.models import ApprovalWebhook

    receiver.status = 503
    webhook_configure(company=company, url=receiver.url, secret=SECRET, principal=None)
    delivery = _item(company).webhook_deliveries.get()
    webhook_deliver(delivery_id=delivery.pk)
    ApprovalWebhook.objects.filter(company=company).delete()
    webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 2, None)
    assert delivery.reason == "The company's webhook was removed or disabled."
    assert len(receiver.requests) == 1
    assert webhook_deliver(delivery_id=delivery.pk) is None  # stopped: no third attempt


def test_every_transition_is_in_the_append_only_history(company, receiver):
    receiver.status = 503
    webhook_configure(company=company, url=receiver.url, secret=SECRET, principal=None)
    delivery = _item(company).webhook_deliveries.get()
    webhook_deliver(delivery_id=delivery.pk)
    receiver.status = 200
    webhook_deliver(delivery_id=delivery.pk)
    assert list(
        delivery.status_history.order_by("id").values_list("status", "attempt", "reason")
    ) == [
        ("sending", 1, ""),
        ("pending", 1, "HTTP 503"),
        ("sending", 2, ""),
        ("delivered", 2, ""),
    ]


def test_the_sweep_hands_each_company_its_own_task_on_the_default_cluster(company, receiver):
    """Webhooks are not LLM work: the per-company tasks go to the default cluster's queue and
    run while every LLM slot of the company is taken."""
    from datetime import timedelta

    from orgmemory.services.webhooks import SWEEP_GRACE
    from synthorg.jobs.dispatch import COMPANY_TASK
    from synthorg.jobs.tasks import jobs_company, jobs_dispatch_kind
    from tests.persistence.factories import CompanyFactory
    from tests.support.llm_slots import slot_held_elsewhere

    other = CompanyFactory()
    for owner in (company, other):
        webhook_configure(company=owner, url=receiver.url, secret=SECRET, principal=None)
    ours, theirs = _item(company).webhook_deliveries.get(), _item(other).webhook_deliveries.get()
    overdue = timezone.now() - SWEEP_GRACE - timedelta(seconds=1)
    WebhookDelivery.objects.update(next_attempt_at=overdue)
    OrmQ.objects.all().delete()
    dispatch = jobs_dispatch_kind("orgmemory.webhook")
    assert dispatch["companies"] == sorted([company.pk, other.pk])
    assert [q.key for q in OrmQ.objects.all()] == ["synthorg", "synthorg"]
    assert sorted((q.func(), q.task["args"]) for q in OrmQ.objects.all()) == sorted(
        [
            (COMPANY_TASK, ("orgmemory.webhook", company.pk)),
            (COMPANY_TASK, ("orgmemory.webhook", other.pk)),
        ]
    )
    with slot_held_elsewhere(company.pk):
        assert jobs_company("orgmemory.webhook", company.pk)["retried"] == 1
    states = dict(WebhookDelivery.objects.values_list("pk", "status"))
    assert states == {ours.pk: "delivered", theirs.pk: "pending"}
    assert len(receiver.requests) == 1


def test_a_dead_receiver_stops_its_companys_batch_only(company, receiver):
    """The first failure stops the company's batch (its endpoint is down): the others keep
    their due time and are not charged an attempt."""
    from datetime import timedelta

    from orgmemory.services.webhooks import SWEEP_GRACE, WEBHOOK_JOB
    from synthorg.jobs.dispatch import jobs_run_due
    from tests.persistence.factories import CompanyFactory

    other = CompanyFactory()
    webhook_configure(company=company, url="http://127.0.0.1:9/hook", secret=SECRET, principal=None)
    webhook_configure(company=other, url=receiver.url, secret=SECRET, principal=None)
    dead = [_item(company).webhook_deliveries.get() for _ in range(3)]
    alive = _item(other).webhook_deliveries.get()
    now = timezone.now()
    WebhookDelivery.objects.update(next_attempt_at=now - SWEEP_GRACE - timedelta(seconds=1))
    assert jobs_run_due(WEBHOOK_JOB, now=now).retried == 2
    states = sorted(
        WebhookDelivery.objects.filter(pk__in=[d.pk for d in dead]).values_list(
            "status", "attempts"
        )
    )
    assert states == [("pending", 0), ("pending", 0), ("pending", 1)]
    assert WebhookDelivery.objects.get(pk=alive.pk).status == "delivered"
