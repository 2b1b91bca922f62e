"""The daily journal tier: one human-readable Markdown entry per extraction run (and per
dream), grouped by UTC day into the seed's ``YYYY-MM-DD.md``. Stored in Postgres so web and
worker processes on different machines share it; ``manage.py export_journal`` writes files."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from memory.ingestion.models import (
    Conversation,
    DreamRun,
    ExtractedFact,
    ExtractionRun,
    JournalEntry,
)
from memory.ingestion.selectors import render_journal
from persistence.models import Agent
from synthorg.text import clip

_DECISION_WORDS = {
    ExtractedFact.Decision.ADDED: "learned",
    ExtractedFact.Decision.NOOP: "already knew",
    ExtractedFact.Decision.BELOW_CONFIDENCE: "unsure (not kept)",
}


def _one_line(text: str, limit: int = 300) -> str:
    return clip(text, limit)


def extraction_markdown(
    *,
    run: ExtractionRun,
    conversation: Conversation,
    facts: Sequence[ExtractedFact],
    at: datetime,
) -> str:
    head = (
        f"## {at:%H:%M} UTC — conversation `{conversation.external_id}`, "
        f"messages {run.first_seq}–{run.last_seq}"
    )
    lines = [head, ""]
    if not facts:
        lines.append("- nothing worth remembering")
    for fact in facts:
        line = f"- {_DECISION_WORDS[fact.decision]} ({fact.category}, {fact.confidence:.2f}): "
        line += _one_line(fact.content)
        if fact.superseded_ids:
            line += " — replaces " + ", ".join(f"`{str(i)[:8]}`" for i in fact.superseded_ids)
        lines.append(line)
    lines.append("")
    lines.append(
        f"_{run.added} added, {run.skipped} already known, {run.superseded} superseded, "
        f"{run.below_confidence} below the confidence threshold (run `{str(run.pk)[:8]}`)._"
    )
    return "\n".join(lines) + "\n"


def journal_append_extraction(
    *,
    run: ExtractionRun,
    conversation: Conversation,
    facts: Sequence[ExtractedFact],
    now: datetime,
) -> JournalEntry:
    """Append the run's entry to the agent's journal of ``now``'s UTC day (in the caller's
    transaction)."""
    utc = now.astimezone(UTC)
    return JournalEntry.objects.create(
        company_id=run.company_id,
        agent_id=run.agent_id,
        day=utc.date(),
        kind=JournalEntry.Kind.EXTRACTION,
        run=run,
        conversation_external_id=conversation.external_id,
        markdown=extraction_markdown(run=run, conversation=conversation, facts=facts, at=utc),
        created_at=now,
    )


def journal_append_dream(*, dream: DreamRun, now: datetime) -> JournalEntry:
    utc = now.astimezone(UTC)
    body = f"## {utc:%H:%M} UTC — deep dream\n\n{dream.diary.strip() or '(no diary)'}\n"
    return JournalEntry.objects.create(
        company_id=dream.company_id,
        agent_id=dream.agent_id,
        day=utc.date(),
        kind=JournalEntry.Kind.DREAM,
        markdown=body,
        created_at=now,
    )


def journal_export(*, agent: Agent, directory: Path, since=None, until=None) -> list[Path]:
    """Write ``<directory>/<agent name>/<YYYY-MM-DD>.md`` for each day of ``agent``'s
    journal (``since``/``until`` inclusive dates); returns the paths written."""
    entries = JournalEntry.objects.filter(company_id=agent.company_id, agent=agent)
    if since is not None:
        entries = entries.filter(day__gte=since)
    if until is not None:
        entries = entries.filter(day__lte=until)
    by_day: dict = {}
    for entry in entries.order_by("day", "created_at", "id"):
        by_day.setdefault(entry.day, []).append(entry.markdown)
    folder = directory / _safe_name(agent.name)
    written = []
    for day, texts in by_day.items():
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{day.isoformat()}.md"
        path.write_text(render_journal(agent_name=agent.name, day=day, entries=texts))
        written.append(path)
    return written


def _safe_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip("._")
    return cleaned or "agent"
