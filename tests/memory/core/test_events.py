"""Memory events against a real local HTTP receiver: the company's webhook receives a signed
payload for each memory write it subscribes to — once per write whichever interface made it,
without content unless the company opted in, retried after a failing endpoint, never another
company's, never blocking the write."""

from __future__ import annotations

import json
import socket
import uuid

import pytest
from django.db import IntegrityError, transaction
from django_q.models import OrmQ

from memory.core.consolidation.models import ArchivalMode
from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from memory.core.services.archive import memories_archive_out
from memory.procedural.tasks import capture_execution_report
from orgmemory.approval_models import APPROVAL_EVENTS
from orgmemory.models import ApprovalWebhook, WebhookDelivery
from orgmemory.services.approvals import approval_decide, approval_request
from orgmemory.services.webhooks import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    webhook_configure,
    webhook_deliver,
    webhook_for_event,
)
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from synthorg.errors import InvalidInputError
from tests.conftest import make_agent_caller
from tests.memory.procedural.conftest import FAILED_REPORT
from tests.persistence.factories import MembershipFactory
from tests.support.webhook_receiver import Receiver, signature_of

pytestmark = pytest.mark.django_db

SECRET = "whsec-events-1"
MEMORIES = "/api/v1/memories"
TOOL_CALL = "/api/v1/memories/tools/call"
MEMORY_EVENTS = [
    "memory.created",
    "memory.updated",
    "memory.archived",
    "memory.restored",
    "memory.deleted",
]
BODY = {
    "content": "The billing service deploys every Friday at noon UTC.",
    "category": "semantic",
    "namespace": "ops",
    "context": "asked by Ana",
    "tags": ["deploy"],
}


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def subscribe(company, url, events=MEMORY_EVENTS, include_content=False):
    return webhook_configure(
        company=company,
        url=url,
        secret=SECRET,
        events=events,
        include_content=include_content,
        principal=None,
    )


def deliver_pending() -> None:
    for delivery in WebhookDelivery.objects.filter(status="pending").order_by("created_at"):
        webhook_deliver(delivery_id=delivery.pk)


def received(receiver) -> list[dict]:
    """Each request's payload, after checking its signature and headers."""
    payloads = []
    for headers, body in receiver.requests:
        assert headers[SIGNATURE_HEADER] == signature_of(SECRET, body)
        assert headers["Content-Type"] == "application/json"
        payload = json.loads(body)
        assert headers[EVENT_HEADER] == payload["event"]
        assert WebhookDelivery.objects.filter(pk=headers[DELIVERY_HEADER]).exists()
        payloads.append(payload)
    return payloads


def memory_part(row: Memory, agent, **content) -> dict:
    return {
        "id": str(row.pk),
        "agent": {"id": agent.pk, "name": agent.name},
        "namespace": row.namespace,
        "category": row.category,
        "level": row.level,
        "is_shared": row.is_shared,
        "confidence": row.confidence,
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
        "expires_at": None,
        **content,
    }


def store(caller, body=BODY) -> Memory:
    response = caller.client.post(MEMORIES, body, format="json")
    assert response.status_code == 201, response.content
    return Memory.objects.get(pk=response.json()["id"])


# --- the payload ------------------------------------------------------------------------------


def test_a_stored_memory_is_one_signed_event_without_content(
    caller, receiver, django_capture_on_commit_callbacks
):
    subscribe(caller.company, receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        row = store(caller)
    # written with the memory, enqueued on commit, not sent inside the request
    assert OrmQ.objects.count() == 1
    assert receiver.requests == []
    deliver_pending()
    assert received(receiver) == [
        {
            "event": "memory.created",
            "company": caller.company.slug,
            "occurred_at": row.updated_at.isoformat(),
            "memory": memory_part(row, caller.agent),
            "supersedes": [],
        }
    ]
    raw = receiver.requests[0][1]
    for text in (b"billing service", b"asked by Ana", b"deploy"):
        assert text not in raw
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.item_id) == ("delivered", 1, None)


def test_content_only_when_the_company_opts_in(caller, receiver):
    subscribe(caller.company, receiver.url, include_content=True)
    row = store(caller)
    deliver_pending()
    (payload,) = received(receiver)
    assert payload["memory"] == memory_part(
        row,
        caller.agent,
        content=BODY["content"],
        context=BODY["context"],
        tags=["deploy"],
    )


def test_update_archive_restore_and_delete_each_send_their_event(caller, receiver):
    subscribe(caller.company, receiver.url)
    row = store(caller)
    response = caller.client.patch(
        f"{MEMORIES}/{row.pk}", {"namespace": "billing", "tags": ["x"]}, format="json"
    )
    assert response.status_code == 200, response.content
    with transaction.atomic():
        locked = list(Memory.objects.select_for_update().filter(pk=row.pk))
        memories_archive_out(
            agent=caller.agent, memories=locked, mode=ArchivalMode.CAPPED, reason="cap"
        )
    archived = ArchivedMemory.objects.get(original_id=row.pk)
    response = caller.client.post(f"/api/v1/archive/{archived.pk}/restore", format="json")
    assert response.status_code in (200, 201), response.content
    restored = Memory.objects.get()
    assert restored.pk != row.pk
    response = caller.client.delete(f"{MEMORIES}/{restored.pk}")
    assert response.status_code == 204
    deliver_pending()

    payloads = received(receiver)
    assert [p["event"] for p in payloads] == MEMORY_EVENTS
    created, updated, archived_event, restored_event, deleted = payloads
    assert created["memory"]["id"] == updated["memory"]["id"] == str(row.pk)
    assert (created["memory"]["namespace"], updated["memory"]["namespace"]) == ("ops", "billing")
    assert updated["changed"] == ["namespace", "tags"]
    assert archived_event["memory"]["id"] == str(row.pk)
    assert archived_event["archive"] == {
        "id": str(archived.pk),
        "mode": "capped",
        "archived_at": archived.archived_at.isoformat(),
    }
    assert restored_event["memory"] == memory_part(restored, caller.agent)
    assert restored_event["archive"] == {"id": str(archived.pk), "original_id": str(row.pk)}
    assert deleted["memory"]["id"] == str(restored.pk)
    assert all("content" not in p["memory"] for p in payloads)


def test_shared_knowledge_published_and_retracted(caller, receiver):
    subscribe(caller.company, receiver.url)
    response = caller.client.post(
        "/api/v1/shared",
        {"content": "Staging resets nightly.", "category": "semantic"},
        format="json",
    )
    assert response.status_code == 201, response.content
    row = Memory.objects.get(pk=response.json()["id"])
    assert caller.client.delete(f"/api/v1/shared/{row.pk}").status_code == 204
    deliver_pending()
    created, deleted = received(receiver)
    assert (created["event"], deleted["event"]) == ("memory.created", "memory.deleted")
    assert created["memory"] == memory_part(row, caller.agent)
    assert created["memory"]["is_shared"] is True
    assert deleted["memory"]["id"] == str(row.pk)


def test_a_lesson_is_a_lesson_event_and_its_memory_event(caller, receiver, settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}  # a rule lesson, no LLM
    subscribe(caller.company, receiver.url, events=["memory.created", "lesson.created"])
    response = caller.client.post("/api/v1/executions", FAILED_REPORT, format="json")
    assert response.status_code == 202, response.content
    assert capture_execution_report(response.json()["id"]) == "captured"
    deliver_pending()
    payloads = received(receiver)
    assert sorted(p["event"] for p in payloads) == ["lesson.created", "memory.created"]
    (lesson,) = [p for p in payloads if p["event"] == "lesson.created"]
    row = Memory.objects.get()
    assert lesson["lesson"] == {
        "id": str(row.pk),
        "origin": "failure",
        "method": "rule",
        "scope": row.scope,
        "requested_scope": row.lesson.requested_scope,
        "report_id": response.json()["id"],
        "propagated_from": None,
        "created_at": row.lesson.created_at.isoformat(),
    }
    assert lesson["memory"] == memory_part(row, caller.agent)
    assert b"helm" not in b"".join(body for _, body in receiver.requests)


def test_approval_decided_alongside_the_approval_events(company, receiver):
    subscribe(company, receiver.url, events=["approval.decided"])
    item = approval_request(
        company=company,
        action_type="deploy:production",
        title="Deploy billing v2",
        risk_level="high",
        source="api",
        requested_by="release-bot",
    )
    assert not WebhookDelivery.objects.exists()  # approval.pending is not subscribed
    membership = MembershipFactory(company=company, role="operator", user__password=None)
    approval_decide(
        company=company,
        actor=Principal.for_human(membership.user, company, "operator"),
        item_id=item.pk,
        decision="reject",
        reason="not this week",
    )
    deliver_pending()
    (payload,) = received(receiver)
    assert payload["event"] == "approval.decided"
    assert (payload["item"]["id"], payload["item"]["status"]) == (str(item.pk), "rejected")


# --- delivery -------------------------------------------------------------------------------


def test_a_failing_endpoint_is_retried_with_the_same_signed_body(caller, receiver):
    subscribe(caller.company, receiver.url)
    receiver.status = 503
    store(caller)
    deliver_pending()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("pending", 1, 503)
    receiver.status = 200
    deliver_pending()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("delivered", 2, 200)
    (first_headers, first), (second_headers, second) = receiver.requests
    assert first == second
    assert first_headers[SIGNATURE_HEADER] == second_headers[SIGNATURE_HEADER]
    assert len(received(receiver)) == 2


def test_a_dead_endpoint_never_blocks_or_fails_the_write(caller):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/hook"
    subscribe(caller.company, dead)
    row = store(caller)
    assert Memory.objects.filter(pk=row.pk).exists()
    deliver_pending()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.reason) == (
        "pending",
        1,
        "The endpoint could not be reached.",
    )


def test_a_rejected_write_sends_nothing(caller, receiver):
    subscribe(caller.company, receiver.url)
    response = caller.client.post(
        MEMORIES, {**BODY, "supersedes": [str(uuid.uuid4())]}, format="json"
    )
    assert response.status_code == 404
    assert not WebhookDelivery.objects.exists()


# --- who receives what ----------------------------------------------------------------------


def test_no_event_for_other_companies_or_unsubscribed_events(caller, outsider, receiver):
    other = Receiver()
    try:
        subscribe(caller.company, receiver.url)
        subscribe(outsider.company, other.url, events=list(APPROVAL_EVENTS))
        mine = store(caller)
        store(outsider, {**BODY, "content": "Outsiders deploy on Mondays."})
        deliver_pending()
        assert [p["memory"]["id"] for p in received(receiver)] == [str(mine.pk)]
        assert other.requests == []
        assert list(WebhookDelivery.objects.values_list("company_id", flat=True)) == [
            caller.company.pk
        ]
    finally:
        other.close()


def test_a_disabled_webhook_gets_nothing(caller, receiver):
    webhook_configure(
        company=caller.company,
        url=receiver.url,
        secret=SECRET,
        enabled=False,
        events=MEMORY_EVENTS,
        principal=None,
    )
    store(caller)
    assert not WebhookDelivery.objects.exists()


def test_one_event_per_write_across_two_interfaces(caller, receiver):
    subscribe(caller.company, receiver.url)
    company_config_set(
        company=caller.company, data={"memory": {"retrieval": {"strategy": "tool_based"}}}
    )
    rest = store(caller)
    response = caller.client.post(
        TOOL_CALL,
        {
            "name": "store_memory",
            "arguments": {"content": "Kafka keeps data for a week.", "category": "semantic"},
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    tool = response.json()["data"]["id"]
    deliver_pending()
    payloads = received(receiver)
    assert sorted(p["memory"]["id"] for p in payloads) == sorted([str(rest.pk), tool])
    assert {p["event"] for p in payloads} == {"memory.created"}
    assert WebhookDelivery.objects.count() == 2


# --- configuration --------------------------------------------------------------------------


def test_unknown_events_are_refused_by_the_service_and_the_database(company):
    with pytest.raises(InvalidInputError) as refused:
        webhook_configure(
            company=company,
            url="https://hooks.example.com/x",
            secret=SECRET,
            events=["memory.created", "memory.exploded"],
            principal=None,
        )
    assert refused.value.code == "unknown_webhook_event"
    assert "memory.exploded" in str(refused.value)
    assert not ApprovalWebhook.objects.exists()
    hook = webhook_configure(
        company=company, url="https://hooks.example.com/x", secret=SECRET, principal=None
    )
    assert (hook.events, hook.include_content) == (list(APPROVAL_EVENTS), False)
    with pytest.raises(IntegrityError), transaction.atomic():
        ApprovalWebhook.objects.filter(pk=hook.pk).update(events=["memory.exploded"])


def test_configuring_again_keeps_the_subscription_unless_given(company):
    subscribe(company, "https://hooks.example.com/x", include_content=True)
    hook = webhook_configure(
        company=company, url="https://hooks.example.com/y", secret=SECRET, principal=None
    )
    assert (hook.url, hook.events, hook.include_content) == (
        "https://hooks.example.com/y",
        MEMORY_EVENTS,
        True,
    )


def test_the_admin_sets_events_and_content(company, client):
    from django.contrib.auth.models import Permission

    membership = MembershipFactory(
        company=company, role="admin", user__password=None, user__is_staff=True
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
            "events": ["memory.created", "lesson.created"],
            "include_content": "on",
        },
    )
    assert response.status_code == 302, response.content[:500]
    hook = ApprovalWebhook.objects.get(company=company)
    assert (hook.events, hook.include_content) == (["memory.created", "lesson.created"], True)
    response = client.post(
        "/admin/orgmemory/approvalwebhook/add/",
        {
            "company": company.pk,
            "url": "https://hooks.example.com/x",
            "secret": "s",
            "events": ["memory.exploded"],
        },
    )
    assert response.status_code == 200  # the form again, naming the bad choice
    assert b"memory.exploded" in response.content


def test_a_failing_memory_delivery_is_listed_in_the_console(caller, receiver):
    """The inbox and the failures page list a memory event's failing delivery (it has no
    approval item to link to) instead of failing to render."""
    from django.test import Client

    subscribe(caller.company, receiver.url)
    receiver.status = 500
    row = store(caller)
    deliver_pending()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.reason) == ("pending", "HTTP 500")
    membership = MembershipFactory(company=caller.company, role="admin", user__password=None)
    client = Client()
    client.force_login(membership.user)
    inbox = client.get("/console/inbox/")
    assert inbox.status_code == 200
    assert "memory.created" in inbox.content.decode()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="failed")
    failures = client.get("/console/failures")
    assert failures.status_code == 200
    assert f"memory.created: {row.pk}" in failures.content.decode()


def test_the_webhook_for_an_event_is_the_subscribed_enabled_one_of_that_company(caller, receiver):
    assert webhook_for_event(company_id=caller.company.pk, event="memory.created") is None
    hook = subscribe(caller.company, receiver.url, events=["memory.created"])
    found = webhook_for_event(company_id=caller.company.pk, event="memory.created")
    assert found is not None and found.pk == hook.pk and found.url == receiver.url
    assert webhook_for_event(company_id=caller.company.pk, event="memory.deleted") is None
    other = make_agent_caller()
    assert webhook_for_event(company_id=other.company.pk, event="memory.created") is None
    ApprovalWebhook.objects.filter(pk=hook.pk).update(enabled=False)
    assert webhook_for_event(company_id=caller.company.pk, event="memory.created") is None
