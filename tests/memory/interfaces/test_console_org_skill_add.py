"""The console's *Add org skill* form (skill evolver page): operators and admins publish a
skill through ``operator_skill_publish``; viewers see no form and are refused; the service's
field errors come back next to each field; a denied write is a message; nothing is written
on any refusal."""

from __future__ import annotations

import pytest
from django.test import Client

from memory.procedural.models import OrgSkill
from memory.procedural.skills import org_skills
from orgmemory.models import OperationLogEntry, OrgFact
from orgmemory.services.facts import ACTION_WRITE_DENIED
from persistence.models import AuditEntry
from persistence.services.companies import company_config_set
from tests.memory.procedural.test_operator_skills import ADVICE, RENDERED, SKILL
from tests.persistence.factories import CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db

PAGE = "/console/memories/skill-evolver"
ADD = "/console/memories/skill-evolver/org-skills"

FORM = {
    "name": SKILL["name"],
    "discovery": SKILL["discovery"],
    "condition": SKILL["condition"],
    "action": SKILL["action"],
    "rationale": SKILL["rationale"],
    # blank lines and surrounding spaces are dropped
    "steps": "  helm rollback the release\r\n\r\nhelm upgrade --timeout 600s\r\n",
    "avoid": "retry the upgrade unchanged",
    "task_type": "deploy",
    "error_category": "timeout",
    "tool": "helm_upgrade",
}


def _client(company, role="operator", **kwargs) -> Client:
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client(**kwargs)
    client.force_login(membership.user)
    client.user = membership.user
    return client


def _assert_nothing_written() -> None:
    assert (OrgSkill.objects.count(), OrgFact.objects.count()) == (0, 0)
    assert OperationLogEntry.objects.count() == 0


def _field_errors(response) -> dict[str, list[str]]:
    return {k: list(v) for k, v in response.context["skill_form"].errors.items()}


def test_an_operator_adds_a_skill_and_sees_it_listed(company):
    operator = _client(company)
    page = operator.get(PAGE).content.decode()
    assert 'id="org-skill-form"' in page and 'name="csrfmiddlewaretoken"' in page

    response = operator.post(ADD, FORM)

    skill = org_skills(company=company).get()
    assert response.status_code == 302
    assert response["Location"] == f"{PAGE}#org-skill-{skill.pk}"
    fact = OrgFact.objects.get()
    assert (skill.pk, skill.fact_id, skill.company_id) == (fact.pk, fact.pk, company.pk)
    assert (skill.source, skill.name, skill.steps, skill.confidence, skill.advice) == (
        "operator",
        SKILL["name"],
        SKILL["steps"],
        1.0,
        ADVICE,
    )
    assert (skill.discovery, skill.condition, skill.action, skill.rationale) == (
        SKILL["discovery"],
        SKILL["condition"],
        SKILL["action"],
        SKILL["rationale"],
    )
    assert (fact.category, fact.content, fact.tags, fact.version) == (
        "procedure",
        RENDERED,
        ["skill", "operator"],
        1,
    )
    entry = OperationLogEntry.objects.get()
    assert (entry.author_is_human, entry.author_user_id) == (True, operator.user.pk)

    listed = operator.get(response["Location"]).content.decode()
    assert f'id="org-skill-{skill.pk}"' in listed
    assert f"Org skill {SKILL['name']} published" in listed


def test_the_optional_fields_may_be_left_empty(company):
    bare = {**FORM, "name": "", "avoid": "", "task_type": "", "error_category": "", "tool": ""}

    response = _client(company, "admin").post(ADD, bare)

    assert response.status_code == 302
    skill = OrgSkill.objects.get()
    assert skill.name == "a-helm-upgrade-that-times-out-is-rolled-back-before-it-is-retrie"  # 64
    assert skill.advice == {
        "situation": {"task_type": "", "error_category": "", "tool": "", "outcome": ""},
        "directives": [ADVICE["directives"][0]],
    }


def test_the_services_field_errors_are_shown_next_to_each_field_and_nothing_is_written(company):
    operator = _client(company)
    bad = {**FORM, "name": "Not A Slug", "condition": "", "steps": "ok\n" + "x" * 1_001}

    response = operator.post(ADD, bad)

    assert response.status_code == 400
    errors = _field_errors(response)
    assert sorted(errors) == ["condition", "name", "steps"]
    assert errors["steps"][0].startswith("line 2: ")
    html = response.content.decode()
    # each error sits in its field's block, and what was typed is kept
    condition_block = html.split('id="skill-field-condition"')[1].split('id="skill-field-')[0]
    assert 'class="message error field-error"' in condition_block
    assert "Not A Slug" in html.split('id="skill-field-name"')[1]
    _assert_nothing_written()


def test_a_nul_character_is_a_form_error_and_writes_nothing(company):
    response = _client(company).post(ADD, {**FORM, "tool": "helm\x00"})

    assert response.status_code == 400
    assert sorted(_field_errors(response)) == ["tool"]
    _assert_nothing_written()


def test_a_write_rule_that_excludes_people_is_shown_as_a_message_and_audited(company):
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

    response = _client(company).post(ADD, FORM)

    assert response.status_code == 403
    assert response.context["skill_error"].startswith("Write to org memory denied: ")
    assert 'id="skill-error"' in response.content.decode()
    assert response.context["skill_form"].data["name"] == SKILL["name"]  # kept as typed
    _assert_nothing_written()
    denied = AuditEntry.objects.get(action_type=ACTION_WRITE_DENIED)
    assert (denied.verdict, denied.details["category"]) == ("denied", "procedure")


def test_a_viewer_sees_no_form_and_their_post_is_refused(company):
    viewer = _client(company, "viewer")
    page = viewer.get(PAGE)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="org-skill-form"' not in html and 'id="skill-role-note"' in html

    response = viewer.post(ADD, FORM)

    assert response.status_code == 403
    assert 'id="org-skill-form"' not in response.content.decode()
    assert response.context["skill_error"] == (
        "Your role can read org skills; operators and admins add them."
    )
    _assert_nothing_written()
    assert AuditEntry.objects.filter(action_type=ACTION_WRITE_DENIED).count() == 0


def test_another_companys_member_neither_sees_nor_adds_to_this_company(company):
    _client(company).post(ADD, FORM)
    ours = OrgSkill.objects.get()
    other = CompanyFactory()
    outsider = _client(other)

    page = outsider.get(PAGE).content.decode()
    assert f'id="org-skill-{ours.pk}"' not in page and SKILL["discovery"] not in page
    # the switcher does not reach a company they are not a member of
    assert outsider.post("/console/company", {"company": company.slug}).status_code == 404
    response = outsider.post(ADD, {**FORM, "name": "theirs"})

    # their post publishes in their own company only
    assert response.status_code == 302
    assert sorted(OrgSkill.objects.values_list("company_id", "name")) == sorted(
        [(company.pk, SKILL["name"]), (other.pk, "theirs")]
    )
    assert list(org_skills(company=company).values_list("pk", flat=True)) == [ours.pk]
    assert OrgFact.objects.filter(company=company).count() == 1


def test_a_post_without_the_csrf_token_is_refused(company):
    response = _client(company, enforce_csrf_checks=True).post(ADD, FORM)

    assert response.status_code == 403
    _assert_nothing_written()


def test_anonymous_posts_are_sent_to_the_login_page(company):
    response = Client().post(ADD, FORM)

    assert response.status_code == 302
    assert response["Location"].startswith("/console/login")
    _assert_nothing_written()


def test_the_add_url_only_takes_posts(company):
    assert _client(company).get(ADD).status_code == 405
