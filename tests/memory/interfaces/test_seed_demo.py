"""``manage.py seed_demo`` (``make demo``): with no LLM, the demo company's learning is visible
at once — lessons in context, an approval item in the inbox, a conversation remembered, a
journal — and a second run changes nothing."""

import pytest
from django.core.management import call_command

from memory.ingestion.models import DreamRun, JournalEntry
from memory.interfaces.service import MemoryService
from memory.procedural.models import ProceduralLesson
from memory.prompting.context import ContextRequest
from orgmemory.models import ApprovalItem
from persistence.models import Agent, Company
from persistence.principal import Principal

pytestmark = pytest.mark.django_db


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
    assert "Apply the recovery the agent reported: Rolled back" in text

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
