"""Admin tenancy: non-superuser staff of two companies, for every registered admin.

Each staff user is an admin member of one company and holds every model permission; the
changelist, change view, delete view and bulk actions must show and touch only their own
company's objects. Writes made in the admin go through the services (audited, with their
side effects).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from memory.core.models.memory import Memory
from memory.core.models.reembed import ReembedJob
from memory.ingestion.models import (
    Conversation,
    ConversationMessage,
    DreamRequest,
    DreamRun,
    ExtractionRun,
    JournalEntry,
)
from orgmemory.models import OperationLogEntry, OrgFact, WriteAccessRequest
from orgmemory.services.facts import fact_publish
from orgmemory.services.write_requests import write_request_file
from persistence.admin_scoping import CompanyScopedAdmin
from persistence.models import (
    Agent,
    AgentApiKey,
    AgentRuntimeState,
    Artifact,
    AuditEntry,
    Checkpoint,
    ClusterHeartbeat,
    CollaborationMetric,
    Company,
    CompanyMembership,
    CostRecord,
    Heartbeat,
    LifecycleEvent,
    Message,
    ParkedContext,
    PersonalityPreset,
    Project,
    Setting,
    Task,
    TaskMetric,
)
from persistence.principal import Principal
from persistence.selectors.config import company_config
from persistence.services.agents import api_key_issue
from persistence.services.artifacts import artifact_create
from persistence.services.costs import cost_record_create
from persistence.services.messaging import message_send
from persistence.services.metrics import collaboration_metric_record, task_metric_record
from persistence.services.presets import preset_create
from persistence.services.projects import project_create
from persistence.services.runtime import (
    checkpoint_save,
    heartbeat_record,
    lifecycle_event_record,
    parked_context_park,
    runtime_state_set,
)
from persistence.services.settings import setting_set
from persistence.services.tasks import task_create
from tests.memory.factories import MemoryFactory
from tests.persistence.factories import (
    AgentFactory,
    CompanyFactory,
    MembershipFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@dataclass
class World:
    company: Company
    user: object
    client: Client
    objects: dict


def _staff(company, role="admin"):
    user = UserFactory(password=None, is_staff=True)
    MembershipFactory(company=company, user=user, role=role)
    user.user_permissions.set(Permission.objects.all())
    client = Client()
    client.force_login(user)
    return user, client


def _ingestion_rows(company, agent, label, now) -> dict:
    from memory.ingestion.domain import MessageIn
    from memory.ingestion.services.messages import conversation_messages_append

    result = conversation_messages_append(
        agent=agent,
        conversation_id=f"chat-{label}",
        messages=[MessageIn(role="user", content=label)],
    )
    conversation = Conversation.objects.get(agent=agent, external_id=f"chat-{label}")
    common = {"company": company, "agent": agent, "created_at": now}
    return {
        Conversation: conversation,
        ConversationMessage: ConversationMessage.objects.get(pk=result.message_ids[0]),
        ExtractionRun: ExtractionRun.objects.create(
            **common,
            conversation=conversation,
            trigger="manual",
            first_seq=1,
            last_seq=1,
            message_count=1,
            status="failed",
            updated_at=now,  # a durable job's (by design)
        ),
        JournalEntry: JournalEntry.objects.create(
            **common, day=now.date(), kind="extraction", markdown=f"journal {label}"
        ),
        DreamRun: DreamRun.objects.create(**common, status="nothing_new"),
        DreamRequest: DreamRequest.objects.create(
            company=company,
            agent=agent,
            via="rest",
            method="extractive",
            requested_at=now,
            created_at=now,
            updated_at=now,
        ),
    }


def _build(label: str) -> World:
    company = CompanyFactory(name=f"Company {label}", slug=f"company-{label}")
    user, client = _staff(company)
    agent = AgentFactory(company=company, name=f"agent-{label}")
    peer = AgentFactory(company=company, name=f"peer-{label}")
    junior = AgentFactory(company=company, name=f"junior-{label}", seniority="junior")
    ap = Principal.for_agent(agent)
    hp = Principal.for_human(user, company, "admin")
    now = timezone.now()
    key = api_key_issue(agent=agent).key
    project = project_create(company=company, name=f"project-{label}")
    task = task_create(principal=ap, title=f"task-{label}")
    fact = fact_publish(
        company=company, actor=hp, content=f"fact {label}", category="procedure", tags=[]
    )
    memory = MemoryFactory(company=company, agent=agent, content=f"memory of {label}")
    run = MaintenanceRun.objects.create(company=company, agent=agent, started_at=now)
    archived = ArchivedMemory.objects.create(
        company=company,
        agent=agent,
        original_id=memory.pk.__class__(int=memory.pk.int ^ 1),
        namespace="default",
        category="semantic",
        content=f"archived {label}",
        created_at=now - timedelta(days=40),
        archived_at=now,
        mode="extractive",
        maintenance_run=run,
    )
    objects = {
        Company: company,
        Agent: agent,
        AgentApiKey: key,
        CompanyMembership: CompanyMembership.objects.get(user=user),
        AuditEntry: AuditEntry.objects.filter(company=company).first(),
        CostRecord: cost_record_create(
            company=company,
            agent=agent,
            provider="openai",
            model="m",
            input_tokens=1,
            output_tokens=1,
            cost="0.01",
        ),
        Message: message_send(principal=ap, channel="ops", content=f"hello {label}"),
        Heartbeat: heartbeat_record(principal=ap, status="ok"),
        LifecycleEvent: lifecycle_event_record(principal=ap, event_type="started"),
        TaskMetric: task_metric_record(principal=ap, task=task, success=True),
        CollaborationMetric: collaboration_metric_record(
            principal=ap, peer=peer, interaction_type="review", score=0.5
        ),
        Task: task,
        Project: project,
        Artifact: artifact_create(principal=ap, artifact_type="doc", name=f"doc-{label}"),
        ParkedContext: parked_context_park(principal=ap, execution_id=f"exec-{label}"),
        Checkpoint: checkpoint_save(principal=ap, execution_id=f"exec-{label}", turn=1),
        AgentRuntimeState: runtime_state_set(principal=ap, agent=agent, status="idle"),
        Setting: setting_set(principal=hp, namespace="ui", key="theme", value={"dark": True}),
        PersonalityPreset: preset_create(principal=hp, name=f"calm-{label}"),
        OrgFact: fact.fact,
        OperationLogEntry: fact,
        WriteAccessRequest: write_request_file(
            company=company,
            actor=Principal.for_agent(junior),
            content=f"convention {label}",
            category="convention",
            justification="needed",
        ),
        Memory: memory,
        ArchivedMemory: archived,
        MaintenanceRun: run,
        ReembedJob: ReembedJob.objects.create(
            company=company,
            to_embedder_id=f"openai:{label}",
            to_dims=768,
            memories_total=3,
            memories_done=1,
            created_at=now,
            updated_at=now,
        ),
        **_ingestion_rows(company, agent, label, now),
    }
    return World(company=company, user=user, client=client, objects=objects)


@pytest.fixture
def worlds():
    return _build("a"), _build("b")


# Server-wide records: superusers only (auth, django_q, axes' login attempts).
SERVER_WIDE = ("auth", "django_q", "axes")
ADMINS = [m for m in admin.site._registry if m._meta.app_label not in SERVER_WIDE]
ADMINS = [m for m in ADMINS if m is not ClusterHeartbeat]
# The models the world above builds objects of (the behavioural tests run for these).
BUILT = [
    Company, Agent, AgentApiKey, CompanyMembership, AuditEntry, CostRecord, Message, Heartbeat,
    LifecycleEvent, TaskMetric, CollaborationMetric, Task, Project, Artifact, ParkedContext,
    Checkpoint, AgentRuntimeState, Setting, PersonalityPreset, OrgFact, OperationLogEntry,
    WriteAccessRequest, Memory, ArchivedMemory, MaintenanceRun, Conversation,
    ConversationMessage, ExtractionRun, JournalEntry, DreamRun, ReembedJob, DreamRequest,
]  # fmt: skip
SCOPED_MODELS = [m for m in BUILT if m in admin.site._registry]


def _url(model, obj=None, view="change"):
    base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
    return base if obj is None else f"{base}{obj.pk}/{view}/"


def test_every_admin_is_company_scoped():
    """A new admin must use the scoped base (and be added to BUILT to be exercised)."""
    unscoped = [
        m.__name__ for m in ADMINS if not isinstance(admin.site._registry[m], CompanyScopedAdmin)
    ]
    assert unscoped == []
    assert set(_build("x").objects) == set(BUILT)


@pytest.mark.parametrize("model", SCOPED_MODELS, ids=lambda m: m.__name__)
def test_delete_and_bulk_delete_never_touch_other_company(worlds, model):
    a, b = worlds
    target = b.objects[model]
    a.client.post(_url(model, target, "delete"), {"post": "yes"})
    a.client.post(
        _url(model),
        {"action": "delete_selected", "_selected_action": [str(target.pk)], "post": "yes"},
    )
    assert model.objects.filter(pk=target.pk).exists()


def test_company_choices_and_user_choices_are_scoped(worlds):
    a, b = worlds
    html = a.client.get("/admin/persistence/task/add/").content.decode()
    assert f'value="{a.company.pk}"' in html
    assert "Company b" not in html
    membership_form = a.client.get("/admin/persistence/companymembership/add/").content.decode()
    assert b.user.username not in membership_form


def test_posting_another_company_or_its_agent_creates_nothing(worlds):
    a, b = worlds
    before = Task.objects.count()
    response = a.client.post(
        "/admin/persistence/task/add/",
        {"company": b.company.pk, "title": "sneaky", "status": "created"},
    )
    assert response.status_code == 200  # the form again, with a choice error
    assert "Select a valid choice" in response.content.decode()
    response = a.client.post(
        "/admin/persistence/task/add/",
        {
            "company": a.company.pk,
            "title": "sneaky",
            "status": "created",
            "assignee": b.objects[Agent].pk,
        },
    )
    assert response.status_code == 200
    assert Task.objects.count() == before


def test_actions_touch_only_own_company(worlds):
    a, b = worlds
    keys = [str(a.objects[AgentApiKey].pk), str(b.objects[AgentApiKey].pk)]
    a.client.post("/admin/persistence/agentapikey/", {"action": "revoke", "_selected_action": keys})
    assert AgentApiKey.objects.get(pk=keys[0]).revoked_at is not None
    assert AgentApiKey.objects.get(pk=keys[1]).revoked_at is None
    revoked = AuditEntry.objects.get(action_type="api_key.revoked")
    assert (revoked.company_id, revoked.actor_user_id) == (a.company.pk, a.user.pk)


def test_viewer_staff_can_look_but_not_write(worlds):
    a, _ = worlds
    _viewer, client = _staff(a.company, role="viewer")
    project = a.objects[Project]
    assert client.get(_url(Project)).status_code == 200
    assert client.get(_url(Project, project)).status_code == 200  # view-only page
    response = client.post(_url(Project, project), {"name": "renamed", "status": "active"})
    assert response.status_code == 403
    assert client.get("/admin/persistence/project/add/").status_code == 403
    project.refresh_from_db()
    assert project.name == "project-a"


def test_closing_a_project_in_admin_runs_project_close(worlds):
    a, _ = worlds
    project = a.objects[Project]
    agent = a.objects[Agent]
    bound = MemoryFactory(company=a.company, agent=agent, level="project", project=project)
    kept = MemoryFactory(company=a.company, agent=agent)
    response = a.client.post(
        _url(Project, project),
        {"name": project.name, "description": "", "status": "completed", "lead": ""},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    project.refresh_from_db()
    assert project.status == "completed" and project.closed_at is not None
    assert not Memory.objects.filter(pk=bound.pk).exists()  # the close hook purged it
    assert Memory.objects.filter(pk=kept.pk).exists()
    closed = AuditEntry.objects.get(action_type="project.closed")
    assert (closed.actor_user_id, closed.target_id) == (a.user.pk, str(project.pk))
    assert closed.details["hooks"]["memory_purge_project"] == {"memories_purged": 1}


def test_task_setting_preset_writes_go_through_services(worlds):
    a, _ = worlds
    response = a.client.post(
        "/admin/persistence/task/add/",
        {"company": a.company.pk, "title": "from admin", "status": "completed"},
    )
    assert response.status_code == 302
    task = Task.objects.get(title="from admin")
    assert task.company == a.company and task.completed_at is not None  # service set it
    response = a.client.post(_url(Setting, a.objects[Setting]), {"value": '{"dark": false}'})
    assert response.status_code == 302
    changed = AuditEntry.objects.filter(action_type="setting.changed").latest("id")
    assert changed.actor_user_id == a.user.pk
    assert changed.details == {"previous": {"dark": True}, "value": {"dark": False}}
    preset = a.objects[PersonalityPreset]
    a.client.post(_url(PersonalityPreset, preset, "delete"), {"post": "yes"})
    assert not PersonalityPreset.objects.filter(pk=preset.pk).exists()


def test_a_refused_service_write_is_a_message_and_changes_nothing(worlds):
    a, _ = worlds
    project = a.objects[Project]  # still open: project_delete refuses (409 in the API)
    response = a.client.post(_url(Project, project, "delete"), {"post": "yes"}, follow=True)
    assert response.status_code == 200
    assert "Only a closed project can be deleted" in response.content.decode()
    assert Project.objects.filter(pk=project.pk).exists()
    assert not AuditEntry.objects.filter(action_type="project.deleted").exists()


def test_agent_privilege_changes_are_audited(worlds):
    a, _ = worlds
    agent = a.objects[Agent]
    response = a.client.post(
        _url(Agent, agent),
        {
            "name": agent.name,
            "role": agent.role,
            "department": agent.department,
            "seniority": "lead",
            "autonomy_level": agent.autonomy_level,
            "memory_level": agent.memory_level,
            "retention_overrides": "{}",
            "is_active": "on",
            "api_keys-TOTAL_FORMS": "0",
            "api_keys-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    agent.refresh_from_db()
    assert agent.seniority == "lead"
    entry = AuditEntry.objects.get(action_type="agent.updated")
    assert entry.actor_user_id == a.user.pk
    assert entry.risk_level == "medium"
    assert entry.details == {"changes": {"seniority": ["mid", "lead"]}}


def test_company_config_change_in_admin_is_audited(worlds):
    a, b = worlds
    response = a.client.post(
        _url(Company, a.company),
        {
            "name": a.company.name,
            "slug": a.company.slug,
            "config_yaml": "memory:\n  level: project\n",
        },
    )
    assert response.status_code == 302
    entry = AuditEntry.objects.get(action_type="company.config_changed")
    assert (entry.company_id, entry.actor_user_id) == (a.company.pk, a.user.pk)
    assert entry.details["changed"] == ["memory.level"]
    assert entry.details["via"] == "admin"
    # the other company cannot be edited by this staff user at all
    response = a.client.post(
        _url(Company, b.company), {"name": "x", "slug": "x", "config_yaml": ""}
    )
    assert response.status_code == 302 and response["Location"] == "/admin/"
    b.company.refresh_from_db()
    assert (b.company.name, b.company.config_revision) == ("Company b", 1)


def test_only_superusers_see_cluster_heartbeats(worlds):
    a, _ = worlds
    assert a.client.get("/admin/persistence/clusterheartbeat/").status_code == 403


def test_erase_action_erases_only_own_company_agents(worlds):
    a, b = worlds
    ids = [str(a.objects[Agent].pk), str(b.objects[Agent].pk)]
    response = a.client.post(
        "/admin/persistence/agent/", {"action": "erase_content", "_selected_action": ids}
    )
    assert response.status_code == 302
    assert not Memory.objects.filter(agent=a.objects[Agent]).exists()
    assert not ArchivedMemory.objects.filter(agent=a.objects[Agent]).exists()
    assert Memory.objects.filter(agent=b.objects[Agent]).exists()
    a.objects[Agent].refresh_from_db()
    b.objects[Agent].refresh_from_db()
    assert (a.objects[Agent].is_active, b.objects[Agent].is_active) == (False, True)
    entry = AuditEntry.objects.get(action_type="agent.erased")
    assert (entry.company_id, entry.actor_user_id) == (a.company.pk, a.user.pk)


def test_staff_see_only_their_companies_people_and_cannot_manage_accounts(worlds):
    a, b = worlds
    html = a.client.get("/admin/auth/user/").content.decode()
    assert f"/admin/auth/user/{a.user.pk}/change/" in html
    assert f"/admin/auth/user/{b.user.pk}/change/" not in html
    assert a.client.get(f"/admin/auth/user/{b.user.pk}/change/").status_code == 302
    response = a.client.post(
        f"/admin/auth/user/{a.user.pk}/change/",
        {"username": a.user.username, "is_superuser": "on", "is_staff": "on"},
    )
    assert response.status_code == 403
    a.user.refresh_from_db()
    assert a.user.is_superuser is False
    assert a.client.get("/admin/auth/group/").status_code == 403


def _admin_pages(world) -> list[str]:
    """Every admin page a staff user of ``world`` may open: index, app indexes, each
    changelist (its filter sidebar included), add form and own object's change form."""
    pages = ["/admin/"]
    pages += sorted({f"/admin/{m._meta.app_label}/" for m in SCOPED_MODELS})
    for model in SCOPED_MODELS:
        pages += [_url(model), _url(model, world.objects[model])]
        pages.append(f"{_url(model)}add/")
    return pages


def test_no_admin_page_names_another_company(worlds):
    """The company filter, FK choices and forms list only the staff user's companies."""
    a, b = worlds
    opened = 0
    for page in _admin_pages(a):
        response = a.client.get(page)
        if response.status_code == 403:  # an add form this model has none of
            continue
        assert response.status_code == 200, page
        html = response.content.decode()
        assert b.company.name not in html, page
        assert b.company.slug not in html, page
        opened += 1
    assert opened > 3 * len(SCOPED_MODELS) // 2
    # A member of two companies gets a company filter offering exactly those two.
    other = CompanyFactory(name="Company c", slug="company-c")
    MembershipFactory(company=other, user=a.user, role="admin")
    AgentFactory(company=other, name="agent-c")
    html = a.client.get(_url(Agent)).content.decode()
    offered = sorted(re.findall(r"\?company__id__exact=(\d+)", html))
    assert offered == sorted([str(a.company.pk), str(other.pk)])
    assert b.company.name not in html


def test_login_attempt_records_are_for_superusers_only(worlds):
    """Axes' records name every company's people and addresses: staff of one company with
    every model permission cannot open them."""
    a, _ = worlds
    assert a.client.get("/admin/axes/accessattempt/").status_code == 403
    assert a.client.get("/admin/axes/accesslog/").status_code == 403
    assert "/admin/axes/" not in a.client.get("/admin/").content.decode()


def _add_agent_form(company, **overrides) -> dict:
    return {
        "company": company.pk,
        "name": "newcomer",
        "role": "analyst",
        "department": "research",
        "seniority": "mid",
        "autonomy_level": "semi",
        "memory_level": "",
        "retention_overrides": "",
        "is_active": "on",
        "api_keys-TOTAL_FORMS": "0",
        "api_keys-INITIAL_FORMS": "0",
        **overrides,
    }


def test_add_agent_offers_every_memory_level_and_the_company_default(worlds):
    a, _ = worlds
    html = a.client.get("/admin/persistence/agent/add/").content.decode()
    select = html.split('name="memory_level"')[1].split("</select>")[0]
    offered = re.findall(r'<option value="([^"]*)"', select)
    assert offered == ["", "persistent", "project", "session", "none"]


@pytest.mark.parametrize("level", ["", "persistent", "project", "session", "none"])
def test_add_agent_with_blank_retention_overrides_creates_it(worlds, level):
    """Blank overrides mean none; a blank level means the company's ``memory.level``."""
    a, _ = worlds
    form = _add_agent_form(a.company, memory_level=level)
    response = a.client.post("/admin/persistence/agent/add/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    agent = Agent.objects.get(company=a.company, name="newcomer")
    assert agent.retention_overrides == {}
    assert agent.memory_level == (level or company_config(a.company).memory.level.value)
    created = AuditEntry.objects.get(action_type="agent.created", target_id=str(agent.pk))
    assert created.actor_user_id == a.user.pk


def test_add_agent_with_invalid_retention_overrides_is_a_form_error(worlds):
    a, _ = worlds
    before = Agent.objects.count()
    response = a.client.post(
        "/admin/persistence/agent/add/",
        _add_agent_form(a.company, retention_overrides='{"default_retention_days": "soon"}'),
    )
    assert response.status_code == 200
    assert "default_retention_days" in response.content.decode()
    assert Agent.objects.count() == before
