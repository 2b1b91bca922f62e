"""The evolver cycle against real reports, a real (local) OpenAI-wire LLM and real org memory:
it emits ApprovalItems only; approving one publishes exactly one org fact."""

import json
import logging
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from memory.procedural.evolver.models import EvolverReport
from memory.procedural.evolver.schedules import evolver_schedules
from memory.procedural.evolver.services import (
    ACTION_CONFLICT,
    ACTION_PROMOTION,
    skill_evolver_run,
)
from memory.procedural.models import ExecutionReport, ProceduralLesson
from memory.procedural.services.reports import execution_report_submit
from memory.procedural.tasks import capture_execution_report
from orgmemory.models import ApprovalItem, OperationLogEntry, OrgFact
from orgmemory.services.approvals import approval_decide
from orgmemory.services.facts import fact_publish
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from synthorg.company_config import CompanyConfigError, parse_company_config
from tests.persistence.factories import AgentFactory, MembershipFactory
from tests.support.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.django_db

ORG_PROPOSAL = {
    "name": "helm-timeouts",
    "discovery": "Helm upgrades of large charts time out at 300s; use a longer timeout.",
    "condition": "a helm upgrade of a large chart times out",
    "action": "retry the helm upgrade with --timeout 900s and --atomic",
    "rationale": "Pre-upgrade hooks run migrations that take about six minutes.",
    "execution_steps": ["Check the hook duration", "Re-run helm upgrade --timeout 900s --atomic"],
    "confidence": 0.9,
    "tags": ["helm"],
    "scope": "agent",
}


@pytest.fixture
def llm(settings):
    with FakeOpenAIServer(chat_reply=json.dumps(ORG_PROPOSAL)) as server:
        settings.SYNTHORG_LLM = {
            **(settings.SYNTHORG_LLM or {}),
            "BASE_URL": server.base_url,
            "API_KEY": "k",
            "MODEL": "fake-chat",
            "MAX_RETRIES": 0,
            "TIMEOUT": 5,
        }
        yield server


@pytest.fixture
def no_llm(settings):
    settings.SYNTHORG_LLM = {**(settings.SYNTHORG_LLM or {}), "BASE_URL": "", "MODEL": ""}


def _enable(company, **evolver):
    company_config_set(
        company=company,
        data={"memory": {"procedural": {"evolver": {"enabled": True, **evolver}}}},
    )


def _report(agent, outcome="failed", category="timeout", tools=("helm_upgrade",)):
    data = {
        "task_type": "deploy",
        "task_title": "Deploy billing",
        "outcome": outcome,
        "tool_calls": [
            {"name": t, "status": "failed" if outcome != "succeeded" else "succeeded"}
            for t in tools
        ],
    }
    if outcome != "succeeded":
        data["error"] = {"category": category, "message": "helm upgrade timed out after 300s"}
    return execution_report_submit(agent=agent, data=data, enqueue=False)


def _fleet(company, n=3, reports_each=1):
    agents = [AgentFactory(company=company) for _ in range(n)]
    for agent in agents:
        for _ in range(reports_each):
            _report(agent)
    return agents


def _operator(company):
    membership = MembershipFactory(company=company, role="operator", user__password=None)
    return Principal.for_human(membership.user, company, "operator")


def test_requires_human_approval_cannot_be_false():
    assert parse_company_config({}).memory.procedural.evolver.requires_human_approval is True
    with pytest.raises(CompanyConfigError) as exc:
        parse_company_config(
            {"memory": {"procedural": {"evolver": {"requires_human_approval": False}}}}
        )
    assert exc.value.errors[0]["field"] == "memory.procedural.evolver.requires_human_approval"


def test_disabled_by_default(company, llm, caplog):
    _fleet(company)
    with caplog.at_level(logging.INFO, logger="memory.procedural.evolver"):
        report = skill_evolver_run(company=company)
    assert report.status == "skipped_disabled"
    assert ApprovalItem.objects.count() == 0
    assert llm.requests_to("/v1/chat/completions") == []
    assert "SKILL_EVOLVER_DISABLED" in caplog.text


def test_cycle_emits_one_promotion_and_writes_no_org_fact(company, llm, caplog):
    _enable(company, min_confidence_for_org_promotion=0.7)
    agents = _fleet(company)
    _report(AgentFactory(company=company), category="auth")  # 1 agent: below the minimum
    with caplog.at_level(logging.INFO, logger="memory.procedural.evolver"):
        report = skill_evolver_run(company=company, trigger="command")
    assert (report.status, report.reports_scanned, report.patterns_found) == ("completed", 4, 2)
    assert (report.patterns_eligible, report.proposals_emitted) == (1, 1)
    assert report.verdicts == {"PARTIAL": 1}
    item = ApprovalItem.objects.get()
    assert [str(item.pk)] == report.items
    assert (item.action_type, item.risk_level, item.status, item.source) == (
        ACTION_PROMOTION,
        "medium",
        "pending",
        "skill_evolver",
    )
    assert item.evidence["pattern"] == "failure:timeout"
    assert item.evidence["agent_ids"] == sorted(a.pk for a in agents)
    assert item.evidence["failure_rate"] == 0.75  # 3 timeouts of 4 deploy reports
    assert item.evidence["confidence"] == 0.75
    assert len(item.evidence["report_ids"]) == 3
    assert item.metadata["proposal"]["scope"] == "org"
    assert "When: a helm upgrade of a large chart times out" in item.metadata["proposal"]["content"]
    assert OrgFact.objects.count() == 0 and OperationLogEntry.objects.count() == 0
    for event in (
        "SKILL_EVOLVER_CYCLE_START",
        "SKILL_EVOLVER_PROPOSAL_EMITTED",
        "SKILL_EVOLVER_CYCLE_COMPLETE",
    ):
        assert event in caplog.text
    prompt = json.loads(llm.requests_to("/v1/chat/completions")[0].body)["messages"][1]["content"]
    assert '"pattern": "failure:timeout"' in prompt


def test_no_llm_drafts_the_advice_the_member_lessons_hold(company, no_llm):
    _enable(company, min_confidence_for_org_promotion=0.5)
    _fleet(company)
    for report in ExecutionReport.objects.all():
        assert capture_execution_report(str(report.pk)) == "captured"  # rule lessons
    lesson = ProceduralLesson.objects.order_by("created_at").first()
    assert lesson.method == "rule"

    report = skill_evolver_run(company=company)
    assert (report.status, report.method, report.proposals_emitted) == ("completed", "rule", 1)
    item = ApprovalItem.objects.get()
    assert (item.action_type, item.status) == (ACTION_PROMOTION, "pending")
    assert item.metadata["method"] == "rule" and item.evidence["method"] == "rule"
    proposal = item.metadata["proposal"]
    # the skill advises exactly what every member lesson advises, titled by that advice
    assert (proposal["discovery"], proposal["condition"], proposal["action"]) == (
        lesson.discovery,
        lesson.condition,
        lesson.action,
    )
    assert proposal["advice"] == lesson.advice
    assert item.title == f"Org skill: {lesson.discovery}"
    assert proposal["execution_steps"] == lesson.execution_steps
    reports = list(ExecutionReport.objects.select_related("agent"))
    names = ", ".join(sorted(r.agent.name for r in reports))
    assert proposal["rationale"] == (
        f"Evidence: 3 execution reports of 3 agents ({names}) (3 failed); task type 'deploy'; "
        "error category 'timeout'; failing tool `helm_upgrade`; 0 retries each; reported "
        f"{reports[0].created_at:%Y-%m-%d}. 3 of 3 reports support this advice. Drafted "
        "without an LLM, from the reports' fields."
    )
    assert (item.evidence["verdict"], item.evidence["contradicts"]) == ("PARTIAL", [])
    assert item.evidence["facts"]["outcomes"] == {"failed": 3}
    assert proposal["scope"] == "org" and item.metadata["pattern"] == "failure:timeout"


def test_approving_publishes_exactly_one_fact_and_consumes_once(company, llm):
    _enable(company, min_confidence_for_org_promotion=0.5)
    _fleet(company)
    skill_evolver_run(company=company)
    item = ApprovalItem.objects.get(action_type=ACTION_PROMOTION)
    human = _operator(company)
    decided = approval_decide(company=company, actor=human, item_id=item.pk, decision="approve")
    assert decided.consumed_at is not None and decided.status == "approved"
    fact = OrgFact.objects.get()
    entry = OperationLogEntry.objects.get()
    assert (fact.category, entry.author_is_human, entry.author_user_id) == (
        "procedure",
        True,
        human.user.pk,
    )
    assert f"approval:{item.pk}" in fact.tags
    assert fact.content == item.metadata["proposal"]["content"]
    from synthorg.errors import ConflictError

    with pytest.raises(ConflictError):
        approval_decide(company=company, actor=human, item_id=item.pk, decision="approve")
    assert OrgFact.objects.count() == 1


def test_full_verdict_supersedes_the_old_entry_on_approval(company, llm, caplog):
    _enable(company, min_confidence_for_org_promotion=0.5)
    human = _operator(company)
    old = fact_publish(
        company=company,
        actor=human,
        content="Helm timeouts.\nWhen: a helm upgrade times out\n"
        "Do: retry the helm upgrade with --timeout 900s\nWhy: slow hooks\nSteps:\n1. retry",
        category="procedure",
        tags=["skill", "confidence:0.40"],
    )
    _fleet(company)
    report = skill_evolver_run(company=company)
    assert report.verdicts == {"FULL": 1}
    item = ApprovalItem.objects.get(action_type=ACTION_PROMOTION)
    assert item.evidence["superseded"]["fact_id"] == str(old.fact_id)
    assert OrgFact.objects.get(pk=old.fact_id).retracted_at is None  # nothing before approval
    with caplog.at_level(logging.INFO, logger="memory.procedural.evolver"):
        approval_decide(company=company, actor=human, item_id=item.pk, decision="approve")
    assert OrgFact.objects.get(pk=old.fact_id).retracted_at is not None
    assert OrgFact.objects.filter(retracted_at__isnull=True).count() == 1
    assert "ORG_SKILL_SUPERSEDED" in caplog.text


def test_conflict_escalates_with_both_texts_and_promotes_nothing(company, llm, caplog):
    _enable(company, min_confidence_for_org_promotion=0.5)
    human = _operator(company)
    old = fact_publish(
        company=company,
        actor=human,
        content="When: a helm upgrade of a large chart times out\n"
        "Do: roll back immediately and page the on-call engineer",
        category="procedure",
    )
    _fleet(company)
    with caplog.at_level(logging.INFO, logger="memory.procedural.evolver"):
        report = skill_evolver_run(company=company)
    assert (report.proposals_emitted, report.conflicts_escalated) == (0, 1)
    item = ApprovalItem.objects.get()
    assert (item.action_type, item.risk_level) == (ACTION_CONFLICT, "high")
    assert item.evidence["existing"]["fact_id"] == str(old.fact_id)
    assert "roll back immediately" in item.evidence["existing"]["content"]
    assert "--timeout 900s" in item.evidence["proposed"]
    assert "SKILL_EVOLVER_CONFLICT_DETECTED" in caplog.text
    assert OrgFact.objects.count() == 1  # nothing promoted before a human decides
    with caplog.at_level(logging.INFO, logger="memory.procedural.evolver"):
        approval_decide(company=company, actor=human, item_id=item.pk, decision="approve")
    # approving the escalation adopts the proposal: published, the contradicted skill retracted
    assert OrgFact.objects.get(pk=old.fact_id).retracted_at is not None
    live = OrgFact.objects.get(retracted_at__isnull=True)
    assert "--timeout 900s" in live.content and live.category == "procedure"
    assert f"approval:{item.pk}" in live.tags
    item.refresh_from_db()
    assert item.status == "approved" and item.consumed_at is not None
    assert "ORG_SKILL_SUPERSEDED" in caplog.text


def test_rejecting_a_conflict_keeps_the_existing_skill(company, llm):
    _enable(company, min_confidence_for_org_promotion=0.5)
    human = _operator(company)
    old = fact_publish(
        company=company,
        actor=human,
        content="When: a helm upgrade of a large chart times out\n"
        "Do: roll back immediately and page the on-call engineer",
        category="procedure",
    )
    _fleet(company)
    skill_evolver_run(company=company)
    item = ApprovalItem.objects.get(action_type=ACTION_CONFLICT)
    approval_decide(
        company=company, actor=human, item_id=item.pk, decision="reject", reason="keep rollback"
    )
    assert list(OrgFact.objects.values_list("pk", "retracted_at")) == [(old.fact_id, None)]


def test_rejected_pattern_is_not_reproposed_until_evidence_grows(company, llm):
    _enable(company, min_confidence_for_org_promotion=0.5)
    agents = _fleet(company)
    skill_evolver_run(company=company)
    item = ApprovalItem.objects.get()
    approval_decide(
        company=company, actor=_operator(company), item_id=item.pk, decision="reject", reason="no"
    )
    again = skill_evolver_run(company=company)
    assert (again.proposals_emitted, again.skipped_already_proposed) == (0, 1)
    assert ApprovalItem.objects.count() == 1
    _report(agents[0])  # the evidence grows: 4 reports now
    grown = skill_evolver_run(company=company)
    assert grown.proposals_emitted == 1
    assert ApprovalItem.objects.filter(status="pending").get().evidence["report_count"] == 4


def test_pending_pattern_is_not_reproposed_and_cap_applies(company, llm):
    _enable(company, min_confidence_for_org_promotion=0.5, max_proposals_per_cycle=1)
    agents = _fleet(company)
    for agent in agents:
        _report(agent, category="oom")
    first = skill_evolver_run(company=company)
    assert first.proposals_emitted == 1
    second = skill_evolver_run(company=company)
    assert (second.proposals_emitted, second.skipped_already_proposed) == (1, 1)
    assert ApprovalItem.objects.count() == 2
    assert EvolverReport.objects.count() == 2


def test_max_org_entries_stops_emission(company, llm):
    _enable(company, min_confidence_for_org_promotion=0.5, max_org_entries=1)
    fact_publish(
        company=company, actor=_operator(company), content="Pin versions.", category="procedure"
    )
    _fleet(company)
    assert skill_evolver_run(company=company).status == "skipped_org_full"
    assert llm.requests_to("/v1/chat/completions") == []
    assert ApprovalItem.objects.count() == 0


def test_command_dry_run_writes_nothing_and_real_run_reports(company, llm):
    _enable(company, min_confidence_for_org_promotion=0.5)
    _fleet(company)
    out, err = StringIO(), StringIO()
    call_command("run_skill_evolver", company.slug, "--dry-run", stdout=out, stderr=err)
    assert "PROPOSE  failure:timeout  agents=3 reports=3 confidence=1.0" in out.getvalue()
    assert "3 reports in the last 7 days" in err.getvalue()
    assert ApprovalItem.objects.count() == 0 and EvolverReport.objects.count() == 0
    assert llm.requests_to("/v1/chat/completions") == []
    out = StringIO()
    call_command("run_skill_evolver", company.slug, stdout=out, stderr=StringIO())
    assert out.getvalue().startswith("completed: 3 reports, 1 patterns, 1 proposals")
    assert ApprovalItem.objects.count() == 1


def test_schedule_follows_the_consolidation_interval(company):
    assert [s for s in evolver_schedules() if s.kwargs["company_id"] == company.pk] == []
    company_config_set(
        company=company,
        data={
            "memory": {
                "consolidation": {"interval": "daily"},
                "procedural": {"evolver": {"enabled": True}},
            }
        },
    )
    (spec,) = [s for s in evolver_schedules() if s.kwargs["company_id"] == company.pk]
    assert (spec.func, spec.schedule_type) == (
        "memory.procedural.evolver.tasks.run_company_evolver",
        "D",
    )


def test_default_threshold_keeps_a_075_pattern_out(company, llm):
    _enable(company)  # min_confidence_for_org_promotion 0.8
    _fleet(company)
    _report(AgentFactory(company=company), category="auth")  # deploy population 4: 3/4 = 0.75
    report = skill_evolver_run(company=company)
    assert (report.status, report.patterns_eligible, report.proposals_emitted) == (
        "completed",
        0,
        0,
    )
    assert llm.requests_to("/v1/chat/completions") == []


def test_approved_skill_reaches_every_agent_through_context(company, llm, caller):
    _enable(company, min_confidence_for_org_promotion=0.5)
    _fleet(company)
    skill_evolver_run(company=company)
    item = ApprovalItem.objects.get()
    approval_decide(company=company, actor=_operator(company), item_id=item.pk, decision="approve")
    fact = OrgFact.objects.get()
    response = caller.client.post(
        "/api/v1/memories/context",
        {"query": "helm upgrade of a large chart times out", "token_budget": 2000},
        format="json",
    )
    assert response.status_code == 200
    included = {(e["kind"], e["id"]) for e in response.json()["included"]}
    assert ("org_fact", f"fact:{fact.fact_id}") in included
    assert "--timeout 900s" in response.json()["messages"][-1]["content"]


def test_console_lists_evolver_runs_of_the_company_only(company, no_llm):
    from django.test import Client

    from tests.persistence.factories import CompanyFactory

    _enable(company)
    skill_evolver_run(company=company, trigger="command")
    skill_evolver_run(company=CompanyFactory(), trigger="schedule")  # disabled elsewhere
    membership = MembershipFactory(company=company, role="viewer", user__password=None)
    client = Client()
    client.force_login(membership.user)
    page = client.get("/console/memories/skill-evolver").content.decode()
    assert page.count('class="evolver-run"') == 1
    assert "Completed" in page and "command" in page


def test_an_invalid_llm_answer_is_replaced_by_the_rule_draft(company, settings, caplog):
    _enable(company, min_confidence_for_org_promotion=0.5)
    _fleet(company)
    with FakeOpenAIServer(chat_reply="I think you should retry.") as server:
        settings.SYNTHORG_LLM = {
            **(settings.SYNTHORG_LLM or {}),
            "BASE_URL": server.base_url,
            "API_KEY": "k",
            "MODEL": "fake-chat",
            "MAX_RETRIES": 0,
            "TIMEOUT": 5,
        }
        with caplog.at_level(logging.WARNING, logger="memory.procedural.evolver"):
            report = skill_evolver_run(company=company)
    assert (report.status, report.drafts_failed, report.proposals_emitted) == ("completed", 1, 1)
    item = ApprovalItem.objects.get()
    assert item.evidence["method"] == "rule"
    assert item.evidence["llm_failure"]["reason"].startswith("invalid JSON from proposer")
    assert "invalid JSON from proposer" in caplog.text


@pytest.mark.parametrize(("window_days", "scanned"), [(7, 3), (2, 0)])
def test_evolver_window_days_is_the_companys(window_days, scanned, company, llm):
    _enable(company, window_days=window_days)
    _fleet(company)  # three reports submitted now; the cycle runs three days later
    later = timezone.now() + timedelta(days=3)
    report = skill_evolver_run(company=company, trigger="command", now=later)
    assert (report.status, report.reports_scanned) == ("completed", scanned)
