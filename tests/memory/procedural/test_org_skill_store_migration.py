"""Migrations procedural 0010 / evolver 0006 (one org skill store, issue 34 item 4): a
database holding an evolver skill and an org-pool entry, with counters, migrates back to
the two stores and forward again keeping every value; migrated back, evolver 0005's data
step still structures approved skills (from the item's proposal, or once from the text)."""

from __future__ import annotations

import importlib

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memory.core.models.memory import Memory
from memory.procedural.evolver.services import skill_evolver_run
from memory.procedural.models import OrgSkill
from orgmemory.models import ApprovalItem
from orgmemory.services.approvals import approval_decide
from orgmemory.services.facts import fact_publish
from persistence.services.companies import company_config_set
from tests.conftest import make_agent_caller
from tests.memory.procedural.evolver.test_evolver import _fleet, _operator
from tests.memory.procedural.evolver.test_evolver import llm as llm  # a fixture
from tests.memory.procedural.test_org_pool import ORG, _capture
from tests.memory.procedural.test_org_pool import _operator as _operator_client
from tests.memory.procedural.test_org_pool import author as author  # a fixture
from tests.memory.procedural.test_org_pool import proposer as proposer  # a fixture

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("procedural", "0009_compressed_experience_memory"), ("evolver", "0005_org_skill")]
#: what evolver.OrgSkill held (keyed by its fact)
OLD_FIELDS = (
    "company_id", "fact_version", "approval_item", "name", "discovery", "condition", "action",
    "rationale", "steps", "confidence", "pattern", "report_count", "agent_count",
    "application_count", "last_applied_at", "created_at",
)  # fmt: skip


def _both_stores(company, author, proposer):
    company_config_set(
        company=company,
        data={
            "memory": {
                "procedural": {
                    "evolver": {"enabled": True, "min_confidence_for_org_promotion": 0.5}
                }
            }
        },
    )
    _fleet(company)
    skill_evolver_run(company=company)
    human = _operator(company)
    evolver_item = ApprovalItem.objects.get(company=company)
    approval_decide(company=company, actor=human, item_id=evolver_item.pk, decision="approve")
    proposer({**ORG, "condition": "A billing deploy needs a schema migration first."})
    _capture(author)
    pool_item = ApprovalItem.objects.get(company=company, status="pending")
    _operator_client(company).post(f"/api/v1/approvals/{pool_item.pk}/approve", {}, format="json")
    entry = Memory.objects.get(scope="org")
    caller = make_agent_caller(company=company)
    for skill in OrgSkill.objects.all():
        assert caller.client.post(f"/api/v1/org-skills/{skill.pk}/applied").status_code == 200
    return human, entry


def test_the_store_migrates_back_and_forth_keeping_every_value(company, author, proposer):
    human, entry = _both_stores(company, author, proposer)
    before = {row["id"]: row for row in OrgSkill.objects.values()}
    assert sorted(row["source"] for row in before.values()) == ["evolver", "lesson-pool"]
    [evolver] = [row for row in before.values() if row["source"] == "evolver"]
    assert evolver["application_count"] == 1 and evolver["advice"]
    assert before[entry.pk]["application_count"] == 1

    call_command("migrate", "procedural", BEFORE[0][1], verbosity=0)  # evolver 0006 with it
    try:
        assert "procedural_orgskill" not in connection.introspection.table_names()
        state = MigrationExecutor(connection).loader.project_state(BEFORE).apps
        OldSkill = state.get_model("evolver", "OrgSkill")
        [old] = OldSkill.objects.values()
        assert old["fact_id"] == evolver["fact_id"] == evolver["id"]
        assert {k: old[k] for k in OLD_FIELDS} == {k: evolver[k] for k in OLD_FIELDS}

        # evolver 0005's step, on this state: from the item's proposal, or the text
        step = importlib.import_module("memory.procedural.evolver.migrations.0005_org_skill")
        OldSkill.objects.all().delete()
        text_only = fact_publish(
            company=company,
            actor=human,
            content="Pin charts.\nWhen: a chart upgrade pulls a new major\nDo: pin the chart "
            "version\nWhy: majors break values\nSteps:\n1. Set --version\n2. Re-run",
            category="procedure",
            tags=["skill", "confidence:0.70", "pattern:failure:chart", "approval:gone"],
        )
        person = fact_publish(company=company, actor=human, content="Pin.", category="procedure")
        step.structure_existing_skills(state, None)
        rebuilt = OldSkill.objects.filter(fact_id=evolver["fact_id"]).values().get()
        counters = ("application_count", "last_applied_at")
        assert {k: rebuilt[k] for k in OLD_FIELDS if k not in counters} == {
            k: evolver[k] for k in OLD_FIELDS if k not in counters
        }
        OldSkill.objects.filter(fact_id=evolver["fact_id"]).update(
            **{k: evolver[k] for k in counters}
        )
        parsed = OldSkill.objects.get(fact_id=text_only.fact_id)
        assert (parsed.name, parsed.condition, parsed.action, parsed.steps) == (
            "pin-charts",
            "a chart upgrade pulls a new major",
            "pin the chart version",
            ["Set --version", "Re-run"],
        )
        assert not OldSkill.objects.filter(fact_id=person.fact_id).exists()
    finally:
        call_command("migrate", verbosity=0)

    after = {row["id"]: row for row in OrgSkill.objects.values()}
    assert after.pop(text_only.fact_id)["source"] == "evolver"
    assert after == before
