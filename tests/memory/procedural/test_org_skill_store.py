"""One org skill store (issue 34 item 4): an approved org-pool lesson is stored structured
beside its memory, as an evolver skill is beside its fact (``source`` says which); both are
read through ``org_skills()`` (API, console, context); a pool proposal is judged and checked
for contradictions against every org skill, whoever proposed it; archiving a pool entry
keeps its skill."""

from __future__ import annotations

import pytest
from django.db import transaction

from memory.core.consolidation.models import ArchivalMode
from memory.core.models.memory import Memory
from memory.core.services.archive import archive_restore, memories_archive_out
from memory.procedural.evolver.services import existing_skills
from memory.procedural.models import OrgSkill, ProceduralLesson
from memory.procedural.services.org_pool_proposals import ACTION_ORG_POOL_CONFLICT
from memory.procedural.skills import org_skill_retire, org_skill_store, org_skills
from orgmemory.models import ApprovalItem, OrgFact
from orgmemory.services.facts import fact_publish
from persistence.models import AuditEntry
from persistence.principal import Principal
from tests.conftest import make_agent_caller
from tests.memory.procedural.conftest import FAILED_REPORT, PROPOSAL
from tests.memory.procedural.test_org_pool import ORG, _capture, _item, _operator
from tests.memory.procedural.test_org_pool import author as author  # a fixture
from tests.memory.procedural.test_org_pool import proposer as proposer  # a fixture
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db


def _approve_pool(company, author, proposer) -> Memory:
    proposer(ORG)
    _capture(author)
    response = _operator(company).post(f"/api/v1/approvals/{_item().pk}/approve", {}, format="json")
    assert response.status_code == 200, response.json()
    return Memory.objects.get(scope="org", superseded_at__isnull=True)


def _operator_skill(company, *, condition, action, advice) -> OrgFact:
    """A skill an operator published: a ``procedure`` fact and its structure."""
    membership = MembershipFactory(company=company, role="operator", user__password=None)
    human = Principal.for_human(membership.user, company, "operator")
    entry = fact_publish(
        company=company,
        actor=human,
        content=f"Operator rule.\nWhen: {condition}\nDo: {action}",
        category="procedure",
    )
    org_skill_store(
        company=company,
        source=OrgSkill.Source.OPERATOR,
        fields={
            "name": "operator-rule",
            "discovery": "Operator rule.",
            "condition": condition,
            "action": action,
            "rationale": "Set by the operator.",
            "steps": [action],
            "confidence": 1.0,
        },
        advice=advice,
        fact_id=entry.fact_id,
        fact_version=entry.version,
        created_at=entry.timestamp,
    )
    return OrgFact.objects.get(pk=entry.fact_id)


def test_an_approved_pool_lesson_is_stored_structured_beside_its_memory(company, author, proposer):
    entry = _approve_pool(company, author, proposer)
    skill = OrgSkill.objects.get()
    item = ApprovalItem.objects.get()
    lesson = ProceduralLesson.objects.get(memory=entry)
    assert (skill.pk, skill.source, skill.memory_id, skill.fact_id, skill.approval_item) == (
        entry.pk,
        "lesson-pool",
        entry.pk,
        None,
        item.pk,
    )
    assert (skill.name, skill.discovery, skill.condition, skill.action, skill.rationale) == (
        lesson.skill_name,
        PROPOSAL["discovery"],
        PROPOSAL["condition"],
        PROPOSAL["action"],
        lesson.rationale,
    )
    assert skill.steps == PROPOSAL["execution_steps"]
    assert skill.advice == lesson.advice and skill.advice
    assert (skill.confidence, skill.report_count, skill.agent_count) == (0.9, 1, 1)
    assert list(org_skills(company=company)) == [skill]


def test_the_api_lists_and_counts_skills_of_every_source(company, author, proposer):
    entry = _approve_pool(company, author, proposer)
    fact = _operator_skill(
        company, condition="a database migration locks a table", action="run it at night",
        advice={},
    )  # fmt: skip
    caller = make_agent_caller(company=company)
    listed = caller.client.get("/api/v1/org-skills").json()["results"]
    assert [(s["id"], s["source"], s["fact_id"], s["memory_id"]) for s in listed] == [
        (str(fact.pk), "operator", str(fact.pk), None),
        (str(entry.pk), "lesson-pool", None, str(entry.pk)),
    ]
    response = caller.client.post(f"/api/v1/org-skills/{entry.pk}/applied")
    assert response.status_code == 200, response.json()
    assert (response.json()["application_count"], response.json()["retracted_at"]) == (1, None)
    # the memory counts as a lesson too, and applying it as a lesson counts on the skill
    caller.client.post(f"/api/v1/memories/{entry.pk}/applied")
    entry.refresh_from_db()
    skill = OrgSkill.objects.get(pk=entry.pk)
    assert (entry.application_count, skill.application_count) == (2, 2)
    assert list(
        AuditEntry.objects.filter(action_type="org_skill.applied").values_list(
            "target_type", "target_id"
        )
    ) == [("memory", str(entry.pk))]


def test_archiving_the_pool_entry_keeps_its_skill_and_a_restore_revives_it(
    company, author, proposer
):
    entry = _approve_pool(company, author, proposer)
    caller = make_agent_caller(company=company)
    caller.client.post(f"/api/v1/org-skills/{entry.pk}/applied")
    with transaction.atomic():
        memories_archive_out(
            agent=author.agent,
            memories=[Memory.objects.select_for_update().get(pk=entry.pk)],
            mode=ArchivalMode.RETENTION,
            reason="retention",
        )
    assert not Memory.objects.filter(pk=entry.pk).exists()
    skill = OrgSkill.objects.get(pk=entry.pk)  # not cascaded
    assert (skill.memory_id, skill.application_count) == (entry.pk, 1)
    assert list(org_skills(company=company)) == []
    gone = caller.client.post(f"/api/v1/org-skills/{entry.pk}/applied")
    assert (gone.status_code, gone.json()["code"]) == (409, "org_skill_retracted")

    restored = archive_restore(agent=author.agent, archive_id=entry.pk).memory_id
    [skill] = org_skills(company=company)
    assert (skill.pk, skill.memory_id, skill.application_count) == (entry.pk, restored, 1)
    for skill_id in (entry.pk, restored):  # its id, or its memory's
        assert caller.client.post(f"/api/v1/org-skills/{skill_id}/applied").status_code == 200
    assert OrgSkill.objects.get().application_count == 3


@pytest.mark.parametrize("archived", [False, True])
def test_erasing_the_author_deletes_its_pool_skill_with_the_memory(
    company, author, proposer, archived
):
    """The skill row keeps the lesson's text and has no database link to its memory: the
    author's erasure deletes it (live or archived entry) and counts it; another company's
    and another author's skills stay."""
    from persistence.services.erasure import agent_erase

    entry = _approve_pool(company, author, proposer)
    other = _operator_skill(
        company, condition="a database migration locks a table", action="run it at night",
        advice={},
    )  # fmt: skip
    if archived:
        with transaction.atomic():
            memories_archive_out(
                agent=author.agent,
                memories=[Memory.objects.select_for_update().get(pk=entry.pk)],
                mode=ArchivalMode.RETENTION,
                reason="retention",
            )
    assert OrgSkill.objects.filter(pk=entry.pk).exists()

    with transaction.atomic():
        report = agent_erase(agent=author.agent)

    assert report.counts["org skills"] == 1
    assert list(OrgSkill.objects.values_list("pk", flat=True)) == [other.pk]
    assert not Memory.objects.filter(pk=entry.pk).exists()


def test_a_pool_proposal_contradicting_an_org_skill_is_caught(company, author, proposer):
    proposer({**ORG, "scope": "agent"})
    first = _capture(author)  # the advice this report yields, as a private lesson
    advice = first.lesson.advice
    flipped = {
        **advice,
        "directives": [
            {**d, "stance": "avoid" if d["stance"] == "do" else "do"} for d in advice["directives"]
        ],
    }
    fact = _operator_skill(
        company,
        condition="a cron job writes to a full disk",
        action="rotate the logs first",
        advice=flipped,
    )
    proposer(ORG)
    other = make_agent_caller(company=company, name="bo")
    _capture(other, {**FAILED_REPORT, "task_title": "Deploy billing again"})
    item = ApprovalItem.objects.get()
    assert item.evidence["verdict"] == "CONTRADICTS"
    [clash] = item.evidence["contradicts"]
    assert (clash["kind"], clash["ref"], clash["content"]) == (
        "org_skill",
        str(fact.pk),
        fact.content,
    )
    assert "contradicts 1 live entry" in item.description


def test_a_pool_conflict_with_an_operator_skill_retracts_the_fact_on_approval(
    company, author, proposer
):
    fact = _operator_skill(
        company,
        condition=PROPOSAL["condition"],
        action="Page the release manager and roll back.",
        advice={},
    )
    proposer(ORG)
    _capture(author)
    item = ApprovalItem.objects.get()
    assert (item.action_type, item.evidence["verdict"]) == (ACTION_ORG_POOL_CONFLICT, "CONFLICT")
    assert item.evidence["existing"] == {"fact_id": str(fact.pk), "content": fact.content}
    response = _operator(company).post(f"/api/v1/approvals/{item.pk}/approve", {}, format="json")
    assert response.status_code == 200, response.json()
    fact.refresh_from_db()
    assert fact.retracted_at is not None
    entry = Memory.objects.get(scope="org")
    assert [(s.pk, s.source) for s in org_skills(company=company)] == [(entry.pk, "lesson-pool")]
    assert [s.pk for s in org_skills(company=company, include_retracted=True)] == [
        entry.pk,
        fact.pk,
    ]


def test_the_evolver_judges_against_pool_skills_and_retires_one_it_replaces(
    company, author, proposer
):
    entry = _approve_pool(company, author, proposer)
    [pool] = [s for s in existing_skills(company) if s.kind == "memory"]
    assert (pool.ref, pool.condition, pool.action, pool.confidence) == (
        str(entry.pk),
        PROPOSAL["condition"],
        PROPOSAL["action"],
        0.9,
    )
    assert pool.as_entry() == {"memory_id": str(entry.pk), "content": PROPOSAL["discovery"]}
    membership = MembershipFactory(company=company, role="operator", user__password=None)
    human = Principal.for_human(membership.user, company, "operator")
    assert org_skill_retire(
        company=company, ref=str(entry.pk), actor=human, approval_item_id=None, replaced_by="x"
    )
    entry.refresh_from_db()
    assert entry.superseded_at is not None and entry.superseded_by_id is None
    assert list(org_skills(company=company)) == []
    assert not org_skill_retire(
        company=company, ref=str(entry.pk), actor=human, approval_item_id=None, replaced_by="x"
    )
