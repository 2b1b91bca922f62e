"""The daily journal (API, export) and the deep dream (hash guard, core supersession)."""

import io
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from memory.core.models.memory import Memory
from memory.ingestion.models import JournalEntry
from memory.ingestion.schedules import dream_schedule_name, dream_schedules
from memory.ingestion.services.dream import agent_dream, current_core
from memory.ingestion.services.extraction import conversation_extract
from synthorg.retrieval.tokens import estimate_tokens
from tests.conftest import make_agent_caller
from tests.memory.ingestion.conftest import configure, fact, flush, reply

pytestmark = pytest.mark.django_db

BILLING = "Ana said billing deploys move to Fridays at noon UTC."


def extract(caller, llm, facts, text=BILLING, conversation="chat-1"):
    conv = flush(caller.agent, [text], conversation=conversation)
    reply(llm, {"facts": facts})
    return conversation_extract(conversation=conv, force=True)


def today():
    return timezone.now().astimezone(UTC).date()


def test_journal_day_is_markdown_and_listed(caller, llm):
    run = extract(
        caller,
        llm,
        [
            fact("Billing deploys every Friday at noon UTC."),
            fact("Maybe Ana likes tea.", category="social", confidence=0.2),
        ],
    )
    day = today().isoformat()
    listing = caller.client.get("/api/v1/journal")
    assert listing.status_code == 200
    assert listing.json() == [{"day": day, "entries": 1, "url": f"/api/v1/journal/{day}"}]

    response = caller.client.get(f"/api/v1/journal/{day}", HTTP_ACCEPT="text/markdown")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    at = run.completed_at.astimezone(UTC)
    assert response.content.decode() == (
        f"# {day} — journal of {caller.agent.name}\n"
        "\n"
        f"## {at:%H:%M} UTC — conversation `chat-1`, messages 1–1\n"
        "\n"
        "- learned (semantic, 0.90): Billing deploys every Friday at noon UTC.\n"
        "- unsure (not kept) (social, 0.20): Maybe Ana likes tea.\n"
        "\n"
        f"_1 added, 0 already known, 0 superseded, 1 below the confidence threshold "
        f"(run `{str(run.pk)[:8]}`)._\n"
    )


def test_journal_errors_and_isolation(caller, peer, outsider, llm):
    extract(caller, llm, [fact("Billing deploys every Friday.")])
    day = today().isoformat()
    for other in (peer, outsider):
        missing = other.client.get(f"/api/v1/journal/{day}")
        assert missing.status_code == 404
        assert missing["Content-Type"] == "application/problem+json"
        assert missing.json()["code"] == "journal_not_found"
        assert other.client.get("/api/v1/journal").json() == []
    bad = caller.client.get("/api/v1/journal/2026-13-45")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_day"


def test_export_journal_writes_one_file_per_day(caller, llm, tmp_path):
    extract(caller, llm, [fact("Billing deploys every Friday.")])
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "export_journal", caller.company.slug, "--out", str(tmp_path), stdout=out, stderr=err
    )
    path = tmp_path / caller.agent.name / f"{today().isoformat()}.md"
    assert out.getvalue().strip() == str(path)
    assert (
        path.read_text()
        == caller.client.get(f"/api/v1/journal/{today().isoformat()}").content.decode()
    )
    assert "1 journal file(s)" in err.getvalue()


def dream_answer(llm, core, diary="Learned the new deploy day."):
    reply(llm, {"core_summary": core, "diary": diary})


def test_dream_writes_core_summary_then_guards_by_hash_then_supersedes(caller, llm):
    extract(caller, llm, [fact("Billing deploys every Friday at noon UTC.")])
    dream_answer(llm, "I work on billing; deploys are Fridays at noon UTC.")
    first = agent_dream(agent=caller.agent)
    assert first.status == "succeeded"
    core = Memory.objects.get(pk=first.core_memory_id)
    assert (core.category, core.tags, core.content) == (
        "semantic",
        ["core"],
        "I work on billing; deploys are Fridays at noon UTC.",
    )
    assert core.source == f"dream:{first.pk}"
    assert first.previous_core_id is None
    assert first.diary == "Learned the new deploy day."
    assert (first.journal_from, first.journal_to, first.journal_entries) == (
        today() - timedelta(days=6),
        today(),
        1,
    )
    prompt = llm.requests_to(llm.CHAT_COMPLETIONS)[-1].json()
    assert prompt["response_format"]["json_schema"]["name"] == "deep_dream"
    assert "Billing deploys every Friday at noon UTC." in prompt["messages"][1]["content"]
    dream_entry = JournalEntry.objects.get(agent=caller.agent, kind="dream")
    assert dream_entry.markdown.endswith("deep dream\n\nLearned the new deploy day.\n")

    # Same journal, same core: the hash guard skips without calling the LLM.
    calls = len(llm.requests_to(llm.CHAT_COMPLETIONS))
    second = agent_dream(agent=caller.agent)
    assert second.status == "unchanged"
    assert second.input_hash == first.input_hash
    assert len(llm.requests_to(llm.CHAT_COMPLETIONS)) == calls

    # New journal material: a new core supersedes the previous one (kept, restorable).
    extract(
        caller,
        llm,
        [fact("Ana now leads billing.", category="social")],
        text="Ana took over billing.",
        conversation="chat-2",
    )
    dream_answer(
        llm,
        "I work on billing, led by Ana; deploys are Fridays at noon UTC.",
        diary="Ana leads billing now.",
    )
    third = agent_dream(agent=caller.agent)
    assert third.status == "succeeded"
    assert third.previous_core_id == core.pk
    core.refresh_from_db()
    assert core.superseded_by_id == third.core_memory_id
    assert current_core(caller.agent).pk == third.core_memory_id
    assert Memory.objects.filter(agent=caller.agent, tags__contains=["core"]).count() == 2
    assert third.journal_entries == 2  # today is read again: one old and one new entry


def test_dream_without_llm_consolidates_extractively(caller, llm, settings):
    extract(caller, llm, [fact("Billing deploys every Friday. Runbook: https://wiki.example/b")])
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}
    run = agent_dream(agent=caller.agent)
    assert (run.status, run.method, run.model) == ("succeeded", "extractive", "")
    core = current_core(caller.agent)
    assert core.pk == run.core_memory_id and core.tags == ["core"]
    # what the agent knows, verbatim: never the journal's bookkeeping (counts, run ids)
    assert core.content == (
        "What I know (kept from my memories, newest last):\n"
        "- Billing deploys every Friday. Runbook: https://wiki.example/b"
    )
    assert run.diary.startswith("Extractive dream (no LLM configured)")
    assert JournalEntry.objects.filter(agent=caller.agent, kind="dream").count() == 1
    # the same journal again: unchanged, no second core
    assert agent_dream(agent=caller.agent).status == "unchanged"


def test_dream_bad_answer_fails_and_nothing_new_without_journal(caller, llm):
    assert agent_dream(agent=caller.agent).status == "nothing_new"
    extract(caller, llm, [fact("Billing deploys every Friday.")])
    reply(llm, "I dreamt of sheep.")
    failed = agent_dream(agent=caller.agent)
    assert failed.status == "failed" and failed.error.startswith("the answer is not JSON")
    assert current_core(caller.agent) is None
    # a failed dream does not arm the guard: the next one runs
    dream_answer(llm, "Billing deploys Fridays.")
    assert agent_dream(agent=caller.agent).status == "succeeded"


def test_dream_reads_only_its_own_agents_journal(caller, peer, llm):
    extract(caller, llm, [fact("Caller's own fact about billing.")])
    extract(peer, llm, [fact("Peer's private fact about payroll.")], text="payroll talk")
    dream_answer(llm, "Core of the caller.")
    agent_dream(agent=caller.agent)
    prompt = llm.requests_to(llm.CHAT_COMPLETIONS)[-1].json()["messages"][1]["content"]
    assert "Caller's own fact" in prompt and "payroll" not in prompt


def test_dream_command_and_schedule(caller, company, llm):
    extract(caller, llm, [fact("Billing deploys every Friday.")])
    make_agent_caller(company=company, memory_level="session")  # does not dream
    dream_answer(llm, "Billing deploys Fridays.")
    out = io.StringIO()
    call_command("dream", company.slug, stdout=out, stderr=io.StringIO())
    assert out.getvalue().splitlines() == [
        f"{caller.agent.name}: succeeded (core memory {current_core(caller.agent).pk})"
    ]
    out = io.StringIO()
    call_command(
        "dream", company.slug, "--agent", caller.agent.name, stdout=out, stderr=io.StringIO()
    )
    assert out.getvalue().strip() == f"{caller.agent.name}: unchanged"

    specs = {s.name: s for s in dream_schedules()}
    spec = specs[dream_schedule_name(company.pk)]
    assert (spec.func, spec.schedule_type, spec.kwargs) == (
        "memory.ingestion.tasks.dream_company",
        "D",
        {"company_id": company.pk},
    )
    configure(company, dream={"interval": "never"})
    assert dream_schedule_name(company.pk) not in {s.name for s in dream_schedules()}


def test_dream_config_is_validated(company):
    from persistence.services.companies import company_config_set
    from synthorg.errors import InvalidInputError

    with pytest.raises(InvalidInputError) as error:
        company_config_set(company=company, data={"memory": {"dream": {"lookback_days": 0}}})
    assert error.value.errors[0]["field"] == "memory.dream.lookback_days"
    with pytest.raises(InvalidInputError) as error:
        company_config_set(company=company, data={"memory": {"extraction": {"debounce": 3}}})
    assert error.value.errors[0]["field"] == "memory.extraction.debounce"


def test_dream_window_starts_at_the_last_dream_day(caller, llm):
    extract(caller, llm, [fact("Billing deploys every Friday.")])
    old = JournalEntry.objects.get(agent=caller.agent)
    JournalEntry.objects.filter(pk=old.pk).update(day=today() - timedelta(days=3))
    dream_answer(llm, "Billing deploys Fridays.")
    agent_dream(agent=caller.agent)
    extract(
        caller,
        llm,
        [fact("Ana leads billing.", category="social")],
        text="Ana leads",
        conversation="chat-2",
    )
    dream_answer(llm, "Billing deploys Fridays; Ana leads.")
    later = agent_dream(agent=caller.agent, now=datetime.now(UTC))
    assert later.journal_from == today()
    assert later.journal_entries == 1


CORE_LINES = (
    "I work on billing with Ana, who leads the team since March.",
    "Billing deploys move to Fridays at noon UTC; staging resets every night at 02:00 UTC.",
    "The runbook lives in the wiki under billing/deploys and lists every rollback step we know.",
)


def test_an_llm_core_longer_than_max_core_tokens_is_cut_at_a_word(caller, llm):
    configure(caller.company, extraction={"store_turns": False}, dream={"max_core_tokens": 50})
    extract(caller, llm, [fact("Billing deploys every Friday at noon UTC.")])
    dream_answer(llm, "\n".join(CORE_LINES), diary="Consolidated.")
    run = agent_dream(agent=caller.agent)
    assert (run.status, run.method) == ("succeeded", "llm")
    assert (
        "at most 50 tokens"
        in llm.requests_to(llm.CHAT_COMPLETIONS)[-1].json()["messages"][0]["content"]
    )
    core = Memory.objects.get(pk=run.core_memory_id)
    # 50 tokens are 203 characters as the service counts (len // 4): the first two lines
    # whole, the third clipped after a word
    assert core.content == (
        f"{CORE_LINES[0]}\n{CORE_LINES[1]}\n"
        "The runbook lives in the wiki under billing/deploys and…"
    )
    assert estimate_tokens(core.content) == 50
    assert run.diary == (
        "Consolidated.\n\nThe answer was longer than memory.dream.max_core_tokens (50 tokens): "
        "its last lines were cut."
    )
    assert JournalEntry.objects.get(agent=caller.agent, kind="dream").markdown.endswith(
        "its last lines were cut.\n"
    )


def test_the_extractive_core_keeps_the_newest_facts_within_max_core_tokens(caller, llm, settings):
    configure(caller.company, extraction={"store_turns": False}, dream={"max_core_tokens": 50})
    facts = [
        "Billing deploys every Friday at noon UTC.",
        "Ana leads the billing team since March.",
        "Staging resets every night at 02:00 UTC.",
        "The runbook lives in the wiki under billing/deploys.",
        "Rollbacks need a second reviewer from the platform team.",
    ]
    extract(caller, llm, [fact(text) for text in facts])
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}
    run = agent_dream(agent=caller.agent)
    assert (run.status, run.method) == ("succeeded", "extractive")
    core = Memory.objects.get(pk=run.core_memory_id)
    # the oldest facts give way: what fits in 203 characters, newest last
    assert core.content == "\n".join(
        ["What I know (kept from my memories, newest last):", *(f"- {t}" for t in facts[3:])]
    )
    assert estimate_tokens(core.content) <= 50
    assert run.diary.startswith("Extractive dream (no LLM configured)")


def test_one_extractive_fact_longer_than_max_core_tokens_is_clipped_at_a_word(
    caller, llm, settings
):
    configure(caller.company, extraction={"store_turns": False}, dream={"max_core_tokens": 50})
    long_fact = (
        "The billing deploy checklist: freeze merges at eleven, announce in the channel, run "
        "the smoke suite against staging, watch the error budget dashboard for fifteen "
        "minutes, then promote."
    )
    extract(caller, llm, [fact(long_fact)])
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}
    run = agent_dream(agent=caller.agent)
    core = Memory.objects.get(pk=run.core_memory_id)
    assert core.content == (
        "What I know (kept from my memories, newest last):\n"
        "- The billing deploy checklist: freeze merges at eleven, announce in the channel, "
        "run the smoke suite against staging, watch the error budget dashboard…"
    )
    assert estimate_tokens(core.content) <= 50
