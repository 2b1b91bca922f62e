"""GET /memories/{id}/history: the texts a memory's corrections replaced, with who, when and
why, for the agents that can read the memory; erased with it."""

import pytest

from memory.core.domain import MemoryStoreRequest
from memory.core.models import MemoryRevision
from memory.core.models.memory import Memory
from memory.core.services.edit import memory_correct
from memory.core.services.shared import shared_publish
from memory.core.services.store import memory_store
from persistence.models import AuditEntry
from persistence.principal import Principal
from persistence.services.erasure import agent_erase
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db


def url(memory_id):
    return f"/api/v1/memories/{memory_id}/history"


def iso(value):
    return value.isoformat().replace("+00:00", "Z")


def stored(agent, content):
    result = memory_store(
        agent=agent, request=MemoryStoreRequest(content=content, category="semantic")
    )
    return Memory.objects.get(pk=result.id)


def corrected(agent, memory, *corrections):
    membership = MembershipFactory(company=agent.company, role="operator")
    principal = Principal.for_human(membership.user, agent.company, "operator")
    for content, reason in corrections:
        memory_correct(
            agent=agent, memory_id=memory.pk, content=content, reason=reason, principal=principal
        )
    return membership.user


def revision_payload(revision, *, reason, username):
    return {
        "id": str(revision.pk),
        "previous_content": revision.previous_content,
        "reason": reason,
        "corrected_by": username,
        "created_at": iso(revision.created_at),
        "audit_entry_id": revision.audit_entry_id,
    }


def test_the_history_lists_each_replaced_text_oldest_first_with_who_when_why(caller):
    memory = stored(caller.agent, "Billing deploys every Friday.")
    user = corrected(
        caller.agent,
        memory,
        ("Billing deploys every Thursday.", "moved"),
        ("Billing deploys every Wednesday.", "moved again"),
    )
    first, second = MemoryRevision.objects.order_by("created_at", "id")
    entries = AuditEntry.objects.filter(action_type="memory.corrected").order_by("created_at")
    assert [first.audit_entry_id, second.audit_entry_id] == [e.pk for e in entries]

    response = caller.client.get(url(memory.pk))

    assert response.status_code == 200
    assert response.json() == {
        "count": 2,
        "next": None,
        "previous": None,
        "results": [
            revision_payload(first, reason="moved", username=user.get_username()),
            revision_payload(second, reason="moved again", username=user.get_username()),
        ],
    }
    assert first.previous_content == "Billing deploys every Friday."
    assert second.previous_content == "Billing deploys every Thursday."


def test_a_memory_never_corrected_has_an_empty_history(caller):
    memory = stored(caller.agent, "Invoices go out on the 1st.")
    response = caller.client.get(url(memory.pk))
    assert response.status_code == 200
    assert response.json() == {"count": 0, "next": None, "previous": None, "results": []}


def test_the_history_is_paginated_like_other_lists(caller, django_assert_max_num_queries):
    memory = stored(caller.agent, "v0")
    corrected(caller.agent, memory, *[(f"v{i}", f"r{i}") for i in range(1, 4)])
    with django_assert_max_num_queries(12):  # the page is 2 queries; the rest is auth
        page = caller.client.get(url(memory.pk), {"page_size": 2}).json()
    assert page["count"] == 3
    assert [r["previous_content"] for r in page["results"]] == ["v0", "v1"]
    assert page["next"].endswith(f"{url(memory.pk)}?page=2&page_size=2")
    last = caller.client.get(url(memory.pk), {"page_size": 2, "page": 2}).json()
    assert [r["previous_content"] for r in last["results"]] == ["v2"]
    assert last["next"] is None


def published(agent, content):
    request = MemoryStoreRequest(content=content, category="semantic")
    return shared_publish(agent=agent, request=request).id


def test_shared_knowledge_is_readable_by_any_agent_of_the_company(caller, peer):
    response = caller.client.get(url(published(peer.agent, "VPN is split-tunnel.")))
    assert response.status_code == 200
    assert response.json()["count"] == 0


def not_found(response):
    body = response.json()
    body.pop("correlation_id", None)
    body.pop("instance", None)
    return response.status_code, body


@pytest.mark.parametrize("who", ["peer", "outsider"])
def test_another_agents_private_memory_or_another_companys_is_not_found_like_its_detail(
    caller, peer, outsider, who
):
    memory = stored(caller.agent, "The vault code is 4411.")
    corrected(caller.agent, memory, ("The vault code was rotated.", "secret"))
    other = {"peer": peer, "outsider": outsider}[who]

    history = other.client.get(url(memory.pk))
    detail = other.client.get(f"/api/v1/memories/{memory.pk}")

    assert not_found(history) == not_found(detail)
    assert history.status_code == 404
    assert history.json()["code"] == "memory_not_found"
    assert "4411" not in history.content.decode()


def test_another_companys_shared_knowledge_is_not_found(caller, outsider):
    response = caller.client.get(url(published(outsider.agent, "Their VPN is split-tunnel.")))
    assert response.status_code == 404
    assert response.json()["code"] == "memory_not_found"


def test_an_unknown_id_is_not_found(caller):
    response = caller.client.get(url("00000000-0000-0000-0000-000000000000"))
    assert response.status_code == 404
    assert response.json()["code"] == "memory_not_found"


def test_a_human_session_is_refused_as_for_every_memory_endpoint(caller, human_client):
    memory = stored(caller.agent, "x")
    response = human_client.get(url(memory.pk))
    detail = human_client.get(f"/api/v1/memories/{memory.pk}")
    assert response.status_code == detail.status_code == 403
    assert response.json()["code"] == detail.json()["code"]


def test_deleting_the_memory_deletes_its_history(caller):
    memory = stored(caller.agent, "The vault code is 4411.")
    corrected(caller.agent, memory, ("The vault code was rotated.", "secret"))
    assert caller.client.delete(f"/api/v1/memories/{memory.pk}").status_code == 204
    assert MemoryRevision.objects.filter(memory_id=memory.pk).count() == 0
    assert caller.client.get(url(memory.pk)).status_code == 404
    # the audit keeps the correction, without the text
    entry = AuditEntry.objects.get(action_type="memory.corrected")
    assert "4411" not in str(entry.details)


def test_erasing_the_agent_erases_its_memories_histories_and_no_one_elses(caller, peer):
    mine = stored(caller.agent, "The vault code is 4411.")
    theirs = stored(peer.agent, "The door code is 1234.")
    corrected(caller.agent, mine, ("The vault code was rotated.", "secret"))
    corrected(peer.agent, theirs, ("The door code was rotated.", "secret"))

    agent_erase(agent=caller.agent)

    assert list(MemoryRevision.objects.values_list("memory_id", flat=True)) == [theirs.pk]
    assert peer.client.get(url(theirs.pk)).json()["count"] == 1
    assert peer.client.get(url(mine.pk)).status_code == 404
