"""Console agents pages: profile, keys created with a name and an expiry (shown once), revoke
after a confirmation; admins manage, operators and viewers read, other companies see 404."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memory.core.domain import MemoryStoreRequest
from memory.core.models import Memory
from memory.core.services.store import memory_store
from persistence.models import AgentApiKey, AuditEntry
from persistence.principal import Principal
from persistence.selectors.identity import agent_for_api_key
from persistence.services.agents import agent_update, api_key_issue, api_key_revoke
from synthorg.errors import InvalidInputError
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db


def _client(company, role):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client()
    client.force_login(membership.user)
    client.membership = membership
    return client


@pytest.fixture
def agent(company):
    return AgentFactory(
        company=company,
        name="billing-bot",
        role="biller",
        department="finance",
        seniority="senior",
        memory_level="persistent",
    )


@pytest.mark.parametrize("role", ["admin", "operator", "viewer"])
def test_every_role_of_the_company_reads_the_agent_page(company, agent, role):
    memory_store(
        agent=agent,
        request=MemoryStoreRequest(content="Invoices go out monthly.", category="semantic"),
    )
    memory_store(
        agent=agent, request=MemoryStoreRequest(content="Ask before refunds.", category="semantic")
    )
    memory_store(
        agent=agent, request=MemoryStoreRequest(content="Met the CFO.", category="episodic")
    )
    api_key_issue(agent=agent, name="ci-runner")
    client = _client(company, role)
    listing = client.get("/console/agents/")
    assert listing.status_code == 200
    assert f'href="/console/agents/{agent.pk}"' in listing.content.decode()
    page = client.get(f"/console/agents/{agent.pk}")
    html = page.content.decode()
    assert page.status_code == 200
    assert '<dd id="memory-level">Persistent</dd>' in html
    assert "<td>semantic</td><td>2</td>" in html and "<td>episodic</td><td>1</td>" in html
    assert '<td id="memory-total">3</td>' in html and '<strong id="lesson-count">0</strong>' in html
    assert "ci-runner" in html
    assert ('id="create-key"' in html) == (role == "admin")
    assert ("Revoke…" in html) == (role == "admin")


def test_another_companys_staff_sees_nothing(company, agent):
    key = api_key_issue(agent=agent, name="ci-runner").key
    outsider = _client(CompanyFactory(), "owner")
    assert "billing-bot" not in outsider.get("/console/agents/").content.decode()
    assert outsider.get(f"/console/agents/{agent.pk}").status_code == 404
    assert outsider.post(f"/console/agents/{agent.pk}/keys", {"name": "x"}).status_code == 404
    revoke = f"/console/agents/{agent.pk}/keys/{key.pk}/revoke"
    assert outsider.get(revoke).status_code == 404
    assert outsider.post(revoke).status_code == 404
    assert AgentApiKey.objects.filter(agent=agent).count() == 1
    key.refresh_from_db()
    assert key.revoked_at is None


def test_admin_creates_a_named_key_with_an_expiry_shown_once(company, agent):
    admin = _client(company, "admin")
    day = timezone.localdate() + timedelta(days=30)
    response = admin.post(
        f"/console/agents/{agent.pk}/keys", {"name": " ci-runner ", "expires_on": day.isoformat()}
    )
    assert response.status_code == 201
    assert response["Cache-Control"] == "no-store"
    key = AgentApiKey.objects.get(agent=agent)
    raw = response.context["raw_key"]
    html = response.content.decode()
    assert f'value="{raw}"' in html and 'data-copy-target="raw-key"' in html
    assert "<script>" not in html and "/static/console/copy.js" in html
    assert key.name == "ci-runner"
    assert timezone.localtime(key.expires_at).date() == day + timedelta(days=1)
    assert timezone.localtime(key.expires_at).time().isoformat() == "00:00:00"
    assert agent_for_api_key(raw).key.pk == key.pk
    # Never shown again: the agent page lists the prefix only.
    page = admin.get(f"/console/agents/{agent.pk}").content.decode()
    assert f"sok_{key.prefix}_…" in page and raw not in page
    entry = AuditEntry.objects.get(action_type="api_key.issued", target_id=str(key.pk))
    assert entry.actor_user_id == admin.membership.user.pk


def test_key_without_expiry_never_expires(company, agent):
    response = _client(company, "admin").post(f"/console/agents/{agent.pk}/keys", {"name": "k"})
    assert response.status_code == 201
    assert AgentApiKey.objects.get(agent=agent).expires_at is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "  "}, "Name the key after where it is used"),
        ({"name": "k", "expires_on": "2020-01-01"}, "expires_at must be in the future."),
        ({"name": "k", "expires_on": "not-a-date"}, "Enter a valid date."),
        ({"name": "k" * 101}, "at most 100 characters"),
    ],
)
def test_refused_key_creation_writes_nothing_and_says_why_on_top(company, agent, data, message):
    response = _client(company, "admin").post(f"/console/agents/{agent.pk}/keys", data)
    assert response.status_code == 400
    html = response.content.decode()
    errors = html.index('id="form-errors"')
    assert message in html[errors:]
    assert errors < html.index('aria-label="Profile"')
    assert not AgentApiKey.objects.filter(agent=agent).exists()
    assert not AuditEntry.objects.filter(action_type="api_key.issued").exists()


@pytest.mark.parametrize("role", ["operator", "viewer"])
def test_operators_and_viewers_cannot_create_or_revoke(company, agent, role):
    key = api_key_issue(agent=agent, name="ci-runner").key
    client = _client(company, role)
    assert client.post(f"/console/agents/{agent.pk}/keys", {"name": "x"}).status_code == 403
    revoke = f"/console/agents/{agent.pk}/keys/{key.pk}/revoke"
    assert client.get(revoke).status_code == 403
    assert client.post(revoke).status_code == 403
    assert list(AgentApiKey.objects.filter(agent=agent).values_list("pk", "revoked_at")) == [
        (key.pk, None)
    ]
    assert not AuditEntry.objects.filter(action_type="api_key.revoked").exists()


def test_revoke_asks_first_then_revokes_once(company, agent):
    issued = api_key_issue(agent=agent, name="ci-runner")
    admin = _client(company, "admin")
    url = f"/console/agents/{agent.pk}/keys/{issued.key.pk}/revoke"
    confirm = admin.get(url)
    assert confirm.status_code == 200
    assert 'id="confirm-revoke"' in confirm.content.decode()
    issued.key.refresh_from_db()
    assert issued.key.revoked_at is None  # asking changes nothing
    assert admin.post(url).status_code == 302
    issued.key.refresh_from_db()
    assert issued.key.revoked_at is not None
    assert agent_for_api_key(issued.raw_key).error.code == "credentials_revoked"
    again = admin.post(url)
    assert again.status_code == 409
    assert "already revoked" in again.content.decode()
    assert AuditEntry.objects.filter(action_type="api_key.revoked").count() == 1


def test_an_expired_key_is_refused_with_its_own_code_and_shown_expired(company, agent):
    issued = api_key_issue(agent=agent, name="old", expires_at=timezone.now() + timedelta(days=1))
    AgentApiKey.objects.filter(pk=issued.key.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert agent_for_api_key(issued.raw_key).error.code == "credentials_expired"
    page = _client(company, "viewer").get(f"/console/agents/{agent.pk}").content.decode()
    assert '<span class="badge">expired</span>' in page


PROFILE = {
    "role": "collector",
    "department": "finance",
    "seniority": "senior",
    "autonomy_level": "semi",
    "memory_level": "none",
    "is_active": "on",
}


def test_admin_edits_the_profile_with_every_memory_level_on_offer(company, agent):
    admin = _client(company, "admin")
    html = admin.get(f"/console/agents/{agent.pk}").content.decode()
    select = html[
        html.index('name="memory_level"') : html.index(
            "</select>", html.index('name="memory_level"')
        )
    ]
    assert [
        v for v in ("persistent", "project", "session", "none") if f'value="{v}"' in select
    ] == [
        "persistent",
        "project",
        "session",
        "none",
    ]
    assert admin.post(f"/console/agents/{agent.pk}/profile", PROFILE).status_code == 302
    agent.refresh_from_db()
    assert (agent.role, agent.memory_level, agent.is_active) == ("collector", "none", True)
    entry = AuditEntry.objects.get(action_type="agent.updated", target_id=str(agent.pk))
    assert entry.details["changes"] == {
        "role": ["biller", "collector"],
        "memory_level": ["persistent", "none"],
    }
    assert entry.actor_user_id == admin.membership.user.pk


@pytest.mark.parametrize("role", ["operator", "viewer"])
def test_only_admins_edit_the_profile(company, agent, role):
    client = _client(company, role)
    assert 'id="save-profile"' not in client.get(f"/console/agents/{agent.pk}").content.decode()
    assert client.post(f"/console/agents/{agent.pk}/profile", PROFILE).status_code == 403
    agent.refresh_from_db()
    assert (agent.role, agent.memory_level) == ("biller", "persistent")
    assert not AuditEntry.objects.filter(action_type="agent.updated").exists()


def test_a_bad_profile_value_is_a_form_error_and_changes_nothing(company, agent):
    admin = _client(company, "admin")
    response = admin.post(
        f"/console/agents/{agent.pk}/profile", {**PROFILE, "memory_level": "forever"}
    )
    assert response.status_code == 400
    assert "Select a valid choice. forever is not one of the available choices." in (
        response.content.decode()
    )
    agent.refresh_from_db()
    assert agent.memory_level == "persistent"
    assert (
        _client(CompanyFactory(), "owner")
        .post(f"/console/agents/{agent.pk}/profile", PROFILE)
        .status_code
        == 404
    )
    assert not AuditEntry.objects.filter(action_type="agent.updated").exists()


def test_the_services_refuse_another_companys_agent_and_key(company, agent):
    """Defence below the console's scoping: a principal acts only on its own company's agents."""
    issued = api_key_issue(agent=agent, name="ci-runner")
    outsider = MembershipFactory(company=CompanyFactory(), role="owner", user__password=None)
    principal = Principal.for_human(outsider.user, outsider.company, "owner")
    for call in (
        lambda: api_key_issue(agent=agent, name="x", principal=principal),
        lambda: api_key_revoke(key=issued.key, principal=principal),
        lambda: agent_update(agent=agent, principal=principal, memory_level="none"),
    ):
        with pytest.raises(InvalidInputError) as refused:
            call()
        assert refused.value.code == "cross_company_reference"
    assert list(AgentApiKey.objects.filter(agent=agent).values_list("pk", "revoked_at")) == [
        (issued.key.pk, None)
    ]
    agent.refresh_from_db()
    assert agent.memory_level == "persistent"
    assert not AuditEntry.objects.filter(
        action_type__in=["api_key.revoked", "agent.updated"]
    ).exists()
    assert AuditEntry.objects.filter(action_type="api_key.issued").count() == 1


def _about(agent, subject, content):
    return memory_store(
        agent=agent,
        request=MemoryStoreRequest(content=content, category="social", subject=subject),
    ).id


def test_an_admin_erases_an_end_user_from_the_agents_page(company, agent):
    peer = AgentFactory(company=company, memory_level="persistent")
    _about(agent, "user-42", "Prefers calls after three.")
    _about(peer, "user-42", "Asked about invoices.")
    kept = _about(agent, "user-7", "Prefers mornings.")
    admin = _client(company, "admin")
    page = admin.get("/console/agents/")
    assert page.status_code == 200 and b"Erase this end user" in page.content

    mismatch = admin.post(
        "/console/agents/subjects/erase", {"subject": "user-42", "confirm": "user-4"}
    )
    assert mismatch.status_code == 400 and b"The two ids differ" in mismatch.content
    assert Memory.objects.filter(subject="user-42").count() == 2

    done = admin.post(
        "/console/agents/subjects/erase",
        {"subject": "user-42", "confirm": "user-42", "reason": "ticket 7"},
    )
    assert done.status_code == 200
    assert b"2 rows deleted" in done.content and b"memories: 2" in done.content
    assert list(Memory.objects.values_list("pk", flat=True)) == [kept]
    entry = AuditEntry.objects.get(action_type="subject.erased")
    assert entry.details["via"] == "console" and entry.details["scope"] == "company"
    assert entry.actor_user_id == admin.membership.user_id


@pytest.mark.parametrize("role", ["operator", "viewer"])
def test_operators_and_viewers_cannot_erase_an_end_user(company, agent, role):
    _about(agent, "user-42", "Prefers calls after three.")
    client = _client(company, role)
    assert b"Erase this end user" not in client.get("/console/agents/").content
    refused = client.post(
        "/console/agents/subjects/erase", {"subject": "user-42", "confirm": "user-42"}
    )
    assert refused.status_code == 403
    assert Memory.objects.filter(subject="user-42").count() == 1
