"""An operator's org skill (issue 34 item 4): a person states a skill as fields, through the
REST API or the admin; one service publishes its ``procedure`` fact and stores its structure
(``source: operator``) in the org skill store in one transaction. The structure — not the
fact's text — is what ``org_skills()``, the contradiction check and the evolver's judge read;
retracting the fact retires the skill."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from rest_framework.test import APIClient

from memory.procedural.contradictions import ORG_SKILL, advising_entries
from memory.procedural.evolver.services import existing_skills
from memory.procedural.models import OrgSkill
from memory.procedural.services.operator_skills import operator_skill_publish
from memory.procedural.skills import org_skills
from orgmemory.models import OperationLogEntry, OrgFact
from orgmemory.services.facts import ACTION_WRITE_DENIED
from persistence.models import AuditEntry
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from synthorg.errors import AccessDeniedError, InvalidInputError
from tests.conftest import make_agent_caller
from tests.persistence.factories import CompanyFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

SKILLS = "/api/v1/org-skills"
ADMIN_ADD = "/admin/procedural/orgskill/add/"

SKILL = {
    "name": "helm-timeout-rollback",
    "discovery": "A helm upgrade that times out is rolled back before it is retried.",
    "condition": "a deploy task's helm_upgrade times out",
    "action": "roll back the release, then retry with a 600 s timeout",
    "rationale": "A half-applied release blocks the next upgrade.",
    "steps": ["helm rollback the release", "helm upgrade --timeout 600s"],
    "avoid": ["retry the upgrade unchanged"],
    "task_type": "deploy",
    "error_category": "timeout",
    "tool": "helm_upgrade",
}
RENDERED = (
    "A helm upgrade that times out is rolled back before it is retried.\n"
    "When: a deploy task's helm_upgrade times out\n"
    "Do: roll back the release, then retry with a 600 s timeout\n"
    "Why: A half-applied release blocks the next upgrade.\n"
    "Steps:\n"
    "1. helm rollback the release\n"
    "2. helm upgrade --timeout 600s"
)
ADVICE = {
    "situation": {
        "task_type": "deploy",
        "error_category": "timeout",
        "tool": "helm_upgrade",
        "outcome": "",
    },
    "directives": [
        {
            "stance": "do",
            "action": "roll back the release, then retry with a 600 s timeout",
            "kind": "operator",
        },
        {"stance": "avoid", "action": "retry the upgrade unchanged", "kind": "operator"},
    ],
}


def _member(company, role="operator"):
    return MembershipFactory(company=company, role=role, user__password=None).user


def _api(company, role="operator") -> APIClient:
    client = APIClient()
    client.user = _member(company, role)
    client.force_login(client.user)
    return client


def _structure(skill: OrgSkill) -> dict:
    return {
        "source": skill.source,
        "name": skill.name,
        "discovery": skill.discovery,
        "condition": skill.condition,
        "action": skill.action,
        "rationale": skill.rationale,
        "steps": skill.steps,
        "confidence": skill.confidence,
        "pattern": skill.pattern,
        "report_count": skill.report_count,
        "agent_count": skill.agent_count,
        "advice": skill.advice,
        "fact_version": skill.fact_version,
        "memory_id": skill.memory_id,
        "approval_item": skill.approval_item,
    }


EXPECTED_STRUCTURE = {
    "source": "operator",
    "name": SKILL["name"],
    "discovery": SKILL["discovery"],
    "condition": SKILL["condition"],
    "action": SKILL["action"],
    "rationale": SKILL["rationale"],
    "steps": SKILL["steps"],
    "confidence": 1.0,
    "pattern": "",
    "report_count": 0,
    "agent_count": 0,
    "advice": ADVICE,
    "fact_version": 1,
    "memory_id": None,
    "approval_item": None,
}


def _assert_nothing_written() -> None:
    assert (OrgSkill.objects.count(), OrgFact.objects.count()) == (0, 0)
    assert OperationLogEntry.objects.count() == 0


# --- REST ---------------------------------------------------------------------------------


def test_an_operator_posts_a_skill_and_it_is_stored_structured_beside_its_fact(company):
    operator = _api(company)
    response = operator.post(SKILLS, SKILL, format="json")

    assert response.status_code == 201, response.json()
    skill = org_skills(company=company).get()
    fact = OrgFact.objects.get()
    assert _structure(skill) == EXPECTED_STRUCTURE
    assert (skill.pk, skill.fact_id) == (fact.pk, fact.pk)
    assert (fact.category, fact.content, fact.tags, fact.version) == (
        "procedure",
        RENDERED,
        ["skill", "operator"],
        1,
    )
    entry = OperationLogEntry.objects.get()
    assert (entry.author_is_human, entry.author_user_id) == (True, operator.user.pk)
    assert response.json() == {
        "id": str(fact.pk),
        "source": "operator",
        "fact_id": str(fact.pk),
        "memory_id": None,
        "name": SKILL["name"],
        "discovery": SKILL["discovery"],
        "condition": SKILL["condition"],
        "action": SKILL["action"],
        "rationale": SKILL["rationale"],
        "steps": SKILL["steps"],
        "confidence": 1.0,
        "pattern": "",
        "report_count": 0,
        "agent_count": 0,
        "application_count": 0,
        "last_applied_at": None,
        "approval_item": None,
        "created_at": response.json()["created_at"],
        "retracted_at": None,
    }
    assert response.json()["created_at"] == skill.created_at.isoformat().replace("+00:00", "Z")
    listed = _api(company, "viewer").get(SKILLS).json()["results"]
    assert [row["id"] for row in listed] == [str(fact.pk)]


def test_name_defaults_to_a_slug_of_the_summary_and_avoid_and_situation_are_optional(company):
    body = {k: SKILL[k] for k in ("discovery", "condition", "action", "rationale", "steps")}
    response = _api(company).post(SKILLS, body, format="json")

    assert response.status_code == 201, response.json()
    skill = OrgSkill.objects.get()
    # the slug is cut at an Agent Skills name's 64 characters
    assert skill.name == "a-helm-upgrade-that-times-out-is-rolled-back-before-it-is-retrie"
    assert skill.advice == {
        "situation": {"task_type": "", "error_category": "", "tool": "", "outcome": ""},
        "directives": [ADVICE["directives"][0]],
    }


def test_retracting_the_fact_retires_the_skill(company):
    operator = _api(company)
    fact_id = operator.post(SKILLS, SKILL, format="json").json()["fact_id"]

    retract = operator.post(
        f"/api/v1/org/facts/{fact_id}/retract", {"reason": "replaced"}, format="json"
    )

    assert retract.status_code == 200, retract.json()
    assert not org_skills(company=company).exists()
    retired = org_skills(company=company, include_retracted=True).get()
    assert retired.retired_at == OrgFact.objects.get().retracted_at is not None
    assert operator.get(SKILLS).json()["results"] == []
    listed = operator.get(SKILLS, {"include_retracted": "true"}).json()["results"]
    assert [(row["id"], row["retracted_at"] is not None) for row in listed] == [(fact_id, True)]
    assert [e for e in advising_entries(company=company) if e.kind == ORG_SKILL] == []


def test_skills_stay_in_their_company(company):
    other = CompanyFactory()
    mine = _api(company).post(SKILLS, SKILL, format="json").json()["id"]
    theirs = _api(other).post(SKILLS, {**SKILL, "name": "theirs"}, format="json").json()["id"]

    assert [str(s.pk) for s in org_skills(company=company)] == [mine]
    assert [str(s.pk) for s in org_skills(company=other)] == [theirs]
    assert [r["id"] for r in _api(other, "viewer").get(SKILLS).json()["results"]] == [theirs]
    # A member of the other company cannot retract this company's skill's fact.
    refused = _api(other).post(f"/api/v1/org/facts/{mine}/retract", {"reason": "x"}, format="json")
    assert refused.status_code == 404
    assert org_skills(company=company).get().retired_at is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"action": ""}, "action"),
        ({"steps": []}, "steps"),
        ({"name": "Not A Slug"}, "name"),
        ({"confidence": 0.2}, "confidence"),  # a person's skill: not settable
        ({"steps": "one step"}, "steps"),
        ({"condition": "x" * 2_001}, "condition"),
    ],
)
def test_bad_input_is_a_400_problem_naming_the_field_and_writes_nothing(company, change, field):
    response = _api(company).post(SKILLS, {**SKILL, **change}, format="json")

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "invalid_skill"
    assert [e["field"].split(".")[0] for e in body["errors"]] == [field]
    _assert_nothing_written()


def test_a_body_that_is_not_an_object_is_a_400(company):
    response = _api(company).post(SKILLS, [SKILL], format="json")
    assert (response.status_code, response.json()["code"]) == (400, "validation_error")
    _assert_nothing_written()


def test_agents_and_viewers_cannot_post_a_skill(company):
    agent = make_agent_caller(company=company)
    refused = agent.client.post(SKILLS, SKILL, format="json")
    assert (refused.status_code, refused["Content-Type"]) == (403, "application/problem+json")
    viewer = _api(company, "viewer").post(SKILLS, SKILL, format="json")
    assert viewer.status_code == 403
    with pytest.raises(AccessDeniedError) as exc:
        operator_skill_publish(company=company, actor=Principal.for_agent(agent.agent), data=SKILL)
    assert exc.value.code == "humans_only"
    _assert_nothing_written()


def test_a_write_rule_that_excludes_people_refuses_the_skill_and_audits_the_denial(company):
    company_config_set(
        company=company,
        data={
            "org_memory": {
                "write_access": {
                    "rules": {"procedure": {"allowed_seniority": "senior", "human_allowed": False}}
                }
            }
        },
    )
    response = _api(company).post(SKILLS, SKILL, format="json")

    assert response.status_code == 403
    assert response.json()["code"] == "org_write_denied"
    _assert_nothing_written()
    denied = AuditEntry.objects.get(action_type=ACTION_WRITE_DENIED)
    assert (denied.verdict, denied.details["category"]) == ("denied", "procedure")


# --- what reads the skill: its structure, not its text ------------------------------------


def test_the_contradiction_check_and_the_judge_read_the_structure(company):
    _api(company).post(SKILLS, SKILL, format="json")
    fact = OrgFact.objects.get()

    (entry,) = [e for e in advising_entries(company=company) if e.kind == ORG_SKILL]
    # The avoid directive and the situation are not in the fact's text: only the structure
    # knows them.
    assert (entry.ref, entry.advice.as_dict()) == (str(fact.pk), ADVICE)
    (skill,) = existing_skills(company)
    assert (skill.ref, skill.condition, skill.action, skill.confidence) == (
        str(fact.pk),
        SKILL["condition"],
        SKILL["action"],
        1.0,
    )


# --- admin --------------------------------------------------------------------------------


def _form(company, **change) -> dict:
    data = {
        **SKILL,
        "company": company.pk,
        "steps": "\n".join(SKILL["steps"]),
        "avoid": "\n".join(SKILL["avoid"]),
    }
    return {**data, **change}


def _staff(company, *, superuser=False, role="operator") -> Client:
    user = UserFactory(password=None, is_staff=True, is_superuser=superuser)
    MembershipFactory(company=company, user=user, role=role)
    if not superuser:
        user.user_permissions.add(
            *Permission.objects.filter(codename__in=["view_orgskill", "add_orgskill"])
        )
    client = Client()
    client.force_login(user)
    client.user = user
    return client


def test_the_admin_add_form_publishes_an_operator_skill(company):
    staff = _staff(company)
    response = staff.post(ADMIN_ADD, _form(company))

    assert response.status_code == 302, response.content.decode()[:2000]
    skill = org_skills(company=company).get()
    assert _structure(skill) == EXPECTED_STRUCTURE
    fact = OrgFact.objects.get()
    assert (fact.content, fact.tags) == (RENDERED, ["skill", "operator"])
    assert OperationLogEntry.objects.get().author_user_id == staff.user.pk


def test_a_staff_member_of_one_company_cannot_add_a_skill_to_another(company):
    other = CompanyFactory()
    staff = _staff(company)

    response = staff.post(ADMIN_ADD, _form(other))

    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    _assert_nothing_written()


def test_a_viewer_staff_member_cannot_add_a_skill(company):
    staff = _staff(company, role="viewer")
    assert staff.get(ADMIN_ADD).status_code == 403
    assert staff.post(ADMIN_ADD, _form(company)).status_code == 403
    _assert_nothing_written()


def test_the_admin_form_shows_the_services_field_errors_and_writes_nothing(company):
    staff = _staff(company, superuser=True)

    response = staff.post(ADMIN_ADD, _form(company, name="Not A Slug", steps="x" * 1_001))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert sorted(errors) == ["name", "steps"]
    _assert_nothing_written()


def test_an_agent_counts_an_application_of_an_operator_skill(company):
    skill_id = _api(company).post(SKILLS, SKILL, format="json").json()["id"]
    agent = make_agent_caller(company=company)

    response = agent.client.post(f"{SKILLS}/{skill_id}/applied")

    assert response.status_code == 200, response.json()
    assert (response.json()["source"], response.json()["application_count"]) == ("operator", 1)
    assert OrgSkill.objects.get().application_count == 1


def test_the_service_refuses_a_nul_character_whichever_interface_calls_it(company):
    actor = Principal.for_human(_member(company), company, "operator")
    with pytest.raises(InvalidInputError) as exc:
        operator_skill_publish(company=company, actor=actor, data={**SKILL, "tool": "helm\x00"})
    assert (exc.value.code, [e["field"] for e in exc.value.errors]) == ("invalid_skill", ["tool"])
    _assert_nothing_written()


def test_an_added_skill_is_listed_and_shown_read_only_in_the_admin(company):
    staff = _staff(company)
    staff.post(ADMIN_ADD, _form(company))
    skill = OrgSkill.objects.get()

    listing = staff.get("/admin/procedural/orgskill/")
    page = staff.get(f"/admin/procedural/orgskill/{skill.pk}/change/")

    assert listing.status_code == page.status_code == 200
    assert SKILL["name"] in listing.content.decode()
    html = page.content.decode()
    assert SKILL["condition"].replace("'", "&#x27;") in html
    assert 'name="_save"' not in html  # view only: a skill is changed by publishing anew
