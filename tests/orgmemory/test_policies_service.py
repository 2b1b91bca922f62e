"""Core policies: one service for the page and the config's list; versions, order, audit."""

import pytest

from orgmemory.models import OperationLogEntry, OrgFact
from orgmemory.selectors.policies import CORE_POLICIES_HEADER, core_policy_block, policies
from orgmemory.services.policies import (
    ACTION_REORDERED,
    VERSIONED_WITHOUT_USER,
    policy_add,
    policy_edit,
    policy_reorder,
    policy_retire,
)
from persistence.models import AuditEntry, Company
from persistence.principal import Principal
from persistence.services.companies import company_config_for_editing, company_config_set
from synthorg.errors import AccessDeniedError, ConflictError
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db


def texts(company):
    return [p.content for p in policies(company=company)]


def published_audits():
    return [
        (e.details["version"], e.details["previous_content"], e.details["content"])
        for e in AuditEntry.objects.filter(action_type="org_fact.published").order_by("id")
    ]


def test_a_human_config_save_versions_the_list_and_stores_none(company, human):
    company_config_set(
        company=company,
        data={"org_memory": {"core_policies": ["PRs need 2 approvals", "No commits to main"]}},
        principal=human,
    )
    company.refresh_from_db()
    assert company.config["org_memory"]["core_policies"] == []
    facts = list(OrgFact.objects.order_by("position"))
    assert [(f.content, f.position, f.version) for f in facts] == [
        ("PRs need 2 approvals", 0, 1),
        ("No commits to main", 1, 1),
    ]
    assert all(
        e.author_is_human and e.author_user_id == human.user.pk
        for e in OperationLogEntry.objects.all()
    )
    assert published_audits() == [
        (1, None, "PRs need 2 approvals"),
        (1, None, "No commits to main"),
    ]
    assert core_policy_block(company=company) == (
        CORE_POLICIES_HEADER + "\n- PRs need 2 approvals\n- No commits to main"
    )
    # The editor shows the live list: saving it unchanged writes no version.
    shown = company_config_for_editing(company)
    assert shown["org_memory"]["core_policies"] == ["PRs need 2 approvals", "No commits to main"]
    company_config_set(company=company, data=shown, principal=human)
    assert OperationLogEntry.objects.count() == 2


def test_an_edited_list_becomes_versions_a_retirement_and_a_new_order(company, human):
    company_config_set(
        company=company,
        data={"org_memory": {"core_policies": ["A", "B", "C"]}},
        principal=human,
    )
    a, b, c = OrgFact.objects.order_by("position")
    company_config_set(
        company=company,
        data={"org_memory": {"core_policies": ["C", "B2"]}},
        principal=human,
    )
    assert texts(company) == ["C", "B2"]
    a.refresh_from_db()
    b.refresh_from_db()
    c.refresh_from_db()
    # A (first unmatched) took B2's text as version 2; B was retired; C kept version 1.
    assert (a.content, a.version, a.retracted_at is None, a.position) == ("B2", 2, True, 1)
    assert (b.version, b.retracted_at is not None) == (2, True)
    assert (c.version, c.position) == (1, 0)
    assert published_audits()[-1] == (2, "A", "B2")
    retracted = AuditEntry.objects.get(action_type="org_fact.retracted")
    assert (retracted.details["previous_content"], retracted.details["content"]) == ("B", None)
    reordered = AuditEntry.objects.filter(action_type=ACTION_REORDERED).latest("id")
    assert reordered.details == {
        "old_order": [str(a.fact_id), str(c.fact_id)],
        "new_order": [str(c.fact_id), str(a.fact_id)],
    }
    # History: as of the first save the texts were the old three (in today's order: the
    # position is not versioned).
    first_save = OperationLogEntry.objects.filter(fact=c).get().timestamp
    assert [p.content for p in policies(company=company, as_of=first_save)] == ["C", "A", "B"]


def test_a_save_without_the_key_leaves_policies_alone(company, human):
    policy_add(company=company, actor=human, content="Keep it")
    company_config_set(company=company, data={"memory": {"level": "persistent"}}, principal=human)
    assert texts(company) == ["Keep it"]
    assert OperationLogEntry.objects.count() == 1


def test_a_save_without_a_human_cannot_contradict_versioned_policies(company, human):
    policy_add(company=company, actor=human, content="Keep it")
    revision = Company.objects.get(pk=company.pk).config_revision
    with pytest.raises(ConflictError) as caught:
        company_config_set(company=company, data={"org_memory": {"core_policies": ["Other"]}})
    assert (caught.value.code, caught.value.detail) == (
        "core_policies_versioned",
        VERSIONED_WITHOUT_USER,
    )
    assert Company.objects.get(pk=company.pk).config_revision == revision
    assert texts(company) == ["Keep it"]


def test_a_list_stored_without_a_human_stays_unversioned_ahead_of_facts(company, human):
    company_config_set(company=company, data={"org_memory": {"core_policies": ["From file"]}})
    policy_add(company=company, actor=human, content="From page")
    assert [(p.source, p.content) for p in policies(company=company)] == [
        ("config", "From file"),
        ("fact", "From page"),
    ]
    # A human saving what the editor shows versions the file's policy too.
    company_config_set(company=company, data=company_config_for_editing(company), principal=human)
    assert [(p.source, p.content) for p in policies(company=company)] == [
        ("fact", "From file"),
        ("fact", "From page"),
    ]


@pytest.mark.parametrize("role", ["operator", "viewer"])
def test_only_admins_change_core_policies(company, human, role):
    entry = policy_add(company=company, actor=human, content="Keep it")
    member = MembershipFactory(company=company, role=role, user__password=None)
    other = Principal.for_human(member.user, company, role)
    with pytest.raises(AccessDeniedError):
        policy_add(company=company, actor=other, content="Mine")
    with pytest.raises(AccessDeniedError):
        policy_edit(
            company=company, actor=other, fact_id=entry.fact_id, content="x", expected_version=1
        )
    with pytest.raises(AccessDeniedError):
        policy_retire(company=company, actor=other, fact_id=entry.fact_id, expected_version=1)
    with pytest.raises(AccessDeniedError):
        policy_reorder(company=company, actor=other, fact_ids=[entry.fact_id])
    assert texts(company) == ["Keep it"]
    assert OperationLogEntry.objects.count() == 1


def test_stale_edit_and_stale_order_are_conflicts(company, human):
    first = policy_add(company=company, actor=human, content="One")
    policy_edit(
        company=company, actor=human, fact_id=first.fact_id, content="One!", expected_version=1
    )
    with pytest.raises(ConflictError) as caught:
        policy_edit(
            company=company, actor=human, fact_id=first.fact_id, content="Lost", expected_version=1
        )
    assert caught.value.code == "fact_version_conflict"
    second = policy_add(company=company, actor=human, content="Two")
    with pytest.raises(ConflictError) as caught:
        policy_reorder(company=company, actor=human, fact_ids=[first.fact_id])  # misses "Two"
    assert caught.value.code == "policy_order_conflict"
    assert texts(company) == ["One!", "Two"]
    policy_reorder(company=company, actor=human, fact_ids=[second.fact_id, first.fact_id])
    assert texts(company) == ["Two", "One!"]


def test_load_company_config_with_a_user_versions_the_seed_file(company, human, tmp_path):
    from django.core.management import call_command

    seed = tmp_path / "company.yaml"
    seed.write_text(
        "org_memory:\n"
        "  core_policies:\n"
        '    - "All code must have 80%+ test coverage"\n'
        '    - "PRs require 2 approvals"\n'
        "  write_access:\n"
        '    policies: ["human"]\n'
        '    adrs: ["human", "senior", "lead", "c_suite"]\n'
        '    procedures: ["human", "senior", "lead", "c_suite"]\n'
    )
    call_command("load_company_config", company.slug, str(seed), "--user", human.user.username)
    assert [(p.source, p.content) for p in policies(company=company)] == [
        ("fact", "All code must have 80%+ test coverage"),
        ("fact", "PRs require 2 approvals"),
    ]
    company.refresh_from_db()
    assert company.config["org_memory"]["core_policies"] == []
    assert company.config["org_memory"]["write_access"]["rules"]["adr"] == {
        "allowed_seniority": "senior",
        "human_allowed": True,
    }
