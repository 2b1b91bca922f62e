"""``manage.py seed_demo`` (``make demo``): with no LLM, the demo company's learning is visible
at once — lessons in context, an approval item in the inbox, a conversation remembered, a
journal — and a second run changes nothing."""

import pytest
from django.core.management import call_command

from memory.ingestion.models import DreamRun, JournalEntry
from memory.interfaces.demo_llm import MODEL_ID, DemoLLMServer
from memory.interfaces.service import MemoryService
from memory.procedural.advice import Advice, contradiction
from memory.procedural.models import ExecutionReport, ProceduralLesson
from memory.prompting.context import ContextRequest
from orgmemory.models import ApprovalItem
from orgmemory.services.approvals import approval_decide
from persistence.models import Agent, Company
from persistence.principal import Principal
from tests.persistence.factories import MembershipFactory
from tests.support.context_checks import context_problems

pytestmark = pytest.mark.django_db


RECOVERY = "Rolled back, then reran helm upgrade with --timeout 600s and --wait."
ADVICE = (
    "'deploy' tasks with a 'timeout' error in `helm_upgrade`: recover as the agent reported: "
    f"{RECOVERY}"
)


def assert_the_skill_is_right(company, item, agents) -> None:
    """The flagship moment: the skill the operator approves agrees with the lesson each agent
    holds, states its evidence exactly as the reports say, is titled by its advice; after
    approval no agent's context holds a contradicting pair, an internal id or a cut word."""
    assert item.title == f"Org skill: {ADVICE}"
    proposal = item.metadata["proposal"]
    day = ExecutionReport.objects.filter(company=company).earliest("created_at").created_at
    evidence = (
        "Evidence: 3 execution reports of 3 agents (deployer, planner, reviewer) (3 partial); "
        "task type 'deploy'; error category 'timeout'; failing tool `helm_upgrade`; 2 retries "
        f"each; reported {day:%Y-%m-%d}."
    )
    if item.metadata["method"] == "rule":
        assert proposal["rationale"] == (
            f"{evidence} 3 of 3 reports support this advice. Drafted without an LLM, from the "
            "reports' fields."
        )
    else:  # the stand-in words the advice; the evidence is the product's
        assert proposal["rationale"] == (
            f"Worded by the stand-in. 3 of 3 reports support this advice. {evidence}"
        )
    assert item.evidence["contradicts"] == [] and item.evidence["verdict"] == "PARTIAL"
    skill = Advice.from_dict(proposal["advice"])
    for lesson in ProceduralLesson.objects.filter(company=company):
        assert contradiction(skill, Advice.from_dict(lesson.advice)) is None, lesson.discovery
    operator = MembershipFactory(company=company, role="operator")
    human = Principal.for_human(operator.user, company, "operator")
    approval_decide(company=company, actor=human, item_id=item.pk, decision="approve")
    for name, agent in agents.items():
        prepared = MemoryService(Principal.for_agent(agent)).context(
            ContextRequest.build(query_text="deploy billing with helm", token_budget=800)
        )
        included = [{"id": e.key, "kind": e.kind} for e in prepared.included]
        assert context_problems(included, prepared.messages) == [], name
        assert any(e.label == "org procedure" for e in prepared.included), name


def test_the_demo_under_its_stand_in_learns_the_same_right_things(settings):
    """``make demo``'s default: learning through the LLM paths against the stand-in."""
    with DemoLLMServer() as server:
        settings.SYNTHORG_LLM = {
            **settings.SYNTHORG_LLM,
            "BASE_URL": server.base_url,
            "MODEL": MODEL_ID,
            "API_KEY": "",
        }
        call_command("seed_demo")
        company = Company.objects.get(slug="demo-fleet")
        agents = {a.name: a for a in Agent.objects.filter(company=company)}
        lessons = ProceduralLesson.objects.filter(company=company)
        assert lessons.count() == 3 and {lesson.method for lesson in lessons} == {"llm"}
        [item] = ApprovalItem.objects.filter(company=company)
        assert item.status == "pending" and item.metadata["method"] == "llm"
        assert_the_skill_is_right(company, item, agents)


def test_the_demo_shows_the_learning_half_without_an_llm(settings, capsys):
    settings.SYNTHORG_LLM = {**settings.SYNTHORG_LLM, "BASE_URL": "", "MODEL": ""}
    call_command("seed_demo")
    company = Company.objects.get(slug="demo-fleet")
    agents = {a.name: a for a in Agent.objects.filter(company=company)}
    assert set(agents) == {"planner", "deployer", "reviewer"}

    lessons = ProceduralLesson.objects.filter(company=company)
    assert lessons.count() == 3 and {lesson.method for lesson in lessons} == {"rule"}
    [item] = ApprovalItem.objects.filter(company=company)
    assert item.status == "pending" and item.metadata["method"] == "rule"

    deployer = MemoryService(Principal.for_agent(agents["deployer"]))
    context = deployer.context(
        ContextRequest.build(query_text="deploy billing with helm", token_budget=800)
    )
    text = "\n".join(message["content"] for message in context.messages)
    assert "Never deploy to production on Fridays after 15:00 UTC." in text
    assert f"Recover as the agent reported: {RECOVERY}" in text
    assert_the_skill_is_right(company, item, agents)

    planner = MemoryService(Principal.for_agent(agents["planner"]))
    remembered = {m.content for m in planner.memories().filter(tags__contains=["verbatim"])}
    assert "Remember that staging uses the eu-1 cluster and its own database." in remembered
    assert DreamRun.objects.get(agent=agents["planner"]).status == "succeeded"
    assert JournalEntry.objects.filter(agent=agents["planner"]).exists()
    out = capsys.readouterr().out
    assert "1 approval item(s) pending" in out and "deployer: sok_" in out

    call_command("seed_demo")  # idempotent: nothing new
    assert ApprovalItem.objects.filter(company=company).count() == 1
    assert ProceduralLesson.objects.filter(company=company).count() == 3
    assert "exists already; nothing seeded" in capsys.readouterr().out
