"""Console memory browser: list, hybrid search, correct and delete with a reason (audited)."""

import hashlib

import pytest
from django.test import Client

from memory.core.domain import MemoryStoreRequest
from memory.core.models.memory import Memory
from memory.core.services.store import memory_store
from persistence.models import AuditEntry
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db


def _client(company, role):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client()
    client.force_login(membership.user)
    client.membership = membership
    return client


def _store(agent, content):
    result = memory_store(
        agent=agent, request=MemoryStoreRequest(content=content, category="semantic")
    )
    return Memory.objects.get(pk=result.id)


@pytest.fixture
def agent(company):
    return AgentFactory(company=company, name="billing-bot")


def test_list_and_hybrid_search(company, agent):
    _store(agent, "Billing deploys every Friday at noon UTC.")
    _store(agent, "The staging database password rotates monthly.")
    other = AgentFactory(company=company)
    _store(other, "Billing runbook lives in the wiki.")
    client = _client(company, "viewer")
    assert "billing-bot" in client.get("/console/memories/").content.decode()
    listing = client.get(f"/console/memories/agents/{agent.pk}").content.decode()
    assert "Billing deploys every Friday" in listing and "password rotates" in listing
    assert "runbook" not in listing
    found = client.get(f"/console/memories/agents/{agent.pk}?q=when+does+billing+deploy")
    html = found.content.decode()
    first_row = html.split('class="memory-row"')[1]
    assert "Billing deploys every Friday" in first_row
    assert "runbook" not in html


def test_delete_needs_reason_and_is_audited(company, agent):
    memory = _store(agent, "The CEO's home address is 12 Elm Street.")
    client = _client(company, "operator")
    url = f"/console/memories/agents/{agent.pk}/{memory.pk}/delete"
    refused = client.post(url, {"reason": " "})
    assert refused.status_code == 400
    assert "A reason is required" in refused.content.decode()
    assert Memory.objects.filter(pk=memory.pk).exists()
    response = client.post(url, {"reason": "personal data"})
    assert response.status_code == 302
    assert not Memory.objects.filter(pk=memory.pk).exists()
    entry = AuditEntry.objects.get(action_type="memory.deleted", target_id=str(memory.pk))
    assert (entry.actor_user_id, entry.details["reason"]) == (
        client.membership.user.pk,
        "personal data",
    )


def test_correct_rewrites_and_audits_the_old_text(company, agent):
    memory = _store(agent, "Billing deploys every Friday.")
    client = _client(company, "admin")
    url = f"/console/memories/agents/{agent.pk}/{memory.pk}/correct"
    assert (
        client.post(url, {"content": "Billing deploys every Thursday.", "reason": ""}).status_code
        == 400
    )
    memory.refresh_from_db()
    assert memory.content == "Billing deploys every Friday."
    response = client.post(url, {"content": "Billing deploys every Thursday.", "reason": "moved"})
    assert response.status_code == 302
    memory.refresh_from_db()
    assert memory.content == "Billing deploys every Thursday."
    entry = AuditEntry.objects.get(action_type="memory.corrected", target_id=str(memory.pk))
    assert (
        entry.details["previous_content_sha256"]
        == hashlib.sha256(b"Billing deploys every Friday.").hexdigest()
    )
    assert "Billing deploys every Friday." not in str(entry.details)
    assert entry.details["reason"] == "moved"


def test_viewer_cannot_change_and_other_company_is_404(company, agent):
    memory = _store(agent, "Keep me.")
    viewer = _client(company, "viewer")
    response = viewer.post(
        f"/console/memories/agents/{agent.pk}/{memory.pk}/delete", {"reason": "x"}
    )
    assert response.status_code == 403
    assert Memory.objects.filter(pk=memory.pk).exists()
    outsider = _client(CompanyFactory(), "owner")
    assert outsider.get(f"/console/memories/agents/{agent.pk}").status_code == 404
    assert (
        outsider.post(
            f"/console/memories/agents/{agent.pk}/{memory.pk}/delete", {"reason": "x"}
        ).status_code
        == 404
    )
    assert Memory.objects.filter(pk=memory.pk).exists()
    assert not AuditEntry.objects.filter(action_type="memory.deleted").exists()
