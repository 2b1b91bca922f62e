"""Approved evolver skills stored structured (issue 34 item 4) and counting their
applications (issue 33 item 2): through the real evolver cycle against the OpenAI-wire
stand-in, the approval service, the REST API and the console."""

import pytest
from django.test import Client

from memory.procedural.evolver import skill_text
from memory.procedural.evolver.services import ACTION_PROMOTION, existing_skills, skill_evolver_run
from memory.procedural.models import OrgSkill
from orgmemory.models import ApprovalItem, OrgFact
from orgmemory.services.approvals import approval_decide
from orgmemory.services.facts import fact_publish, fact_retract
from persistence.models import AuditEntry
from persistence.services.companies import company_config_set
from tests.memory.procedural.evolver.test_evolver import _fleet, _operator
from tests.memory.procedural.evolver.test_evolver import llm as llm  # a fixture
from tests.persistence.factories import MembershipFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("llm")]

MULTILINE_ACTION = "retry the helm upgrade with --timeout 900s\nthen check the release status"


def _approved(company, **edits):
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
    item = ApprovalItem.objects.get(company=company, action_type=ACTION_PROMOTION)
    human = _operator(company)
    approval_decide(
        company=company, actor=human, item_id=item.pk, decision="approve", edits=edits or None
    )
    item.refresh_from_db()
    return item, OrgFact.objects.get(company=company, retracted_at__isnull=True), human


def applied(caller, fact_id, **kw):
    return caller.client.post(f"/api/v1/org-skills/{fact_id}/applied", format="json", **kw)


def test_an_approved_skill_is_stored_structured_and_its_text_rendered_from_that(company):
    item, fact, _ = _approved(company, action="retry with --timeout 1200s")
    skill = OrgSkill.objects.get(pk=fact.pk)
    proposal = item.metadata["proposal"]
    assert (skill.company_id, skill.fact_version, skill.approval_item) == (
        company.pk,
        fact.version,
        item.pk,
    )
    assert (skill.name, skill.discovery, skill.condition, skill.action, skill.rationale) == (
        "helm-timeouts",
        proposal["discovery"],
        "a helm upgrade of a large chart times out",
        "retry with --timeout 1200s",
        proposal["rationale"],
    )
    assert skill.steps == proposal["execution_steps"]
    assert (skill.report_count, skill.agent_count) == (3, 3)
    assert skill.confidence == item.evidence["confidence"]
    assert skill.pattern == item.evidence["pattern"]
    assert (skill.application_count, skill.last_applied_at) == (0, None)
    fields = skill_text.SkillFields.model_validate(
        {k: getattr(skill, k) for k in skill_text.SkillFields.model_fields}
    )
    assert fact.content == fields.render()


def test_supersession_reads_the_stored_structure_not_the_text(company):
    """Regression: the evolver read its own skills back out of the fact's text, so an action
    of more than one line came back as its first line only."""
    _, fact, _ = _approved(company, action=MULTILINE_ACTION)
    [existing] = existing_skills(company)
    assert existing.ref == str(fact.pk)
    assert (existing.condition, existing.action) == (
        "a helm upgrade of a large chart times out",
        MULTILINE_ACTION,
    )


def test_a_new_version_a_person_published_is_read_as_the_persons_text(company):
    _, fact, human = _approved(company)
    fact_publish(
        company=company,
        actor=human,
        content="Always page the on-call before retrying a helm upgrade.",
        category="procedure",
        fact_id=fact.pk,
        tags=[],
    )
    [existing] = existing_skills(company)
    assert (
        existing.condition
        == existing.action
        == ("Always page the on-call before retrying a helm upgrade.")
    )
    assert existing.confidence == 1.0


def test_applying_a_skill_counts_atomically_and_is_audited(company, caller):
    _, fact, _ = _approved(company)
    first = applied(caller, fact.pk)
    assert first.status_code == 200
    assert (first.json()["fact_id"], first.json()["application_count"]) == (str(fact.pk), 1)
    second = applied(caller, fact.pk).json()
    assert second["application_count"] == 2 and second["last_applied_at"] is not None
    skill = OrgSkill.objects.get(pk=fact.pk)
    assert skill.application_count == 2
    assert skill.last_applied_at is not None
    entries = AuditEntry.objects.filter(action_type="org_skill.applied")
    assert list(entries.values_list("target_id", "actor_agent_id")) == [
        (str(fact.pk), caller.agent.pk),
        (str(fact.pk), caller.agent.pk),
    ]


def test_refused_applications_change_nothing(company, caller, outsider, human_client):
    _, fact, human = _approved(company)
    person = fact_publish(
        company=company, actor=human, content="Pin chart versions.", category="procedure"
    )
    response = applied(outsider, fact.pk)  # another company's skill
    assert (response.status_code, response.json()["code"]) == (404, "org_skill_not_found")
    response = applied(caller, person.fact_id)  # a person's procedure: no counters
    assert (response.status_code, response.json()["code"]) == (404, "org_skill_not_found")
    response = applied(caller, fact.pk, data={"times": 2})
    assert (response.status_code, response.json()["code"]) == (400, "validation_error")
    assert human_client.post(f"/api/v1/org-skills/{fact.pk}/applied").status_code == 403
    fact_retract(company=company, actor=human, fact_id=fact.pk, reason="obsolete")
    response = applied(caller, fact.pk)
    assert (response.status_code, response.json()["code"]) == (409, "org_skill_retracted")
    skill = OrgSkill.objects.get(pk=fact.pk)
    assert (skill.application_count, skill.last_applied_at) == (0, None)
    assert not AuditEntry.objects.filter(action_type="org_skill.applied").exists()


def test_the_api_and_the_console_show_skills_with_their_counters(company, caller, outsider):
    _, fact, _ = _approved(company)
    applied(caller, fact.pk)
    listed = caller.client.get("/api/v1/org-skills").json()["results"]
    assert [(s["fact_id"], s["name"], s["application_count"]) for s in listed] == [
        (str(fact.pk), "helm-timeouts", 1)
    ]
    assert listed[0]["steps"] == OrgSkill.objects.get(pk=fact.pk).steps
    assert outsider.client.get("/api/v1/org-skills").json()["results"] == []
    bad = caller.client.get("/api/v1/org-skills?include_retracted=maybe")
    assert bad.status_code == 400
    membership = MembershipFactory(company=company, role="viewer", user__password=None)
    client = Client()
    client.force_login(membership.user)
    page = client.get("/console/memories/skill-evolver").content.decode()
    assert f'data-id="{fact.pk}"' in page
    assert '<td data-label="Applied" class="applied">1 time, last' in page
