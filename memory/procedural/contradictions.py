"""What the company's live entries advise, and which of them a new piece of advice contradicts.

Three kinds of entries advise an agent: its **lessons** (``ProceduralLesson.advice``, computed
from the report), the org's **skills** (the org skill store,
:func:`memory.procedural.skills.org_skills`, whoever proposed them — an evolver skill or an
org-pool lesson or an operator's skill advises what its stored structure says; a ``procedure``
fact published as free text is read from its text) and the **core policies** (read from
their text).
:func:`advising_entries` lists them; :func:`contradicted_by` says which of them a proposed
skill contradicts (:func:`memory.procedural.advice.contradiction`), so the approval item can
list each one side by side before anyone approves.

:func:`entry_advice` is what the context assembly uses for one entry of any kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from memory.core.models.memory import live_q
from memory.procedural.advice import Advice, advice_from_text, contradiction
from memory.procedural.models import OrgSkill, ProceduralLesson
from memory.procedural.skills import org_skills
from orgmemory.models import ApprovalItem, OrgFact
from orgmemory.selectors.policies import policies
from persistence.models import Company
from synthorg.enums import OrgFactCategory

LESSON = "lesson"
ORG_SKILL = "org_skill"
CORE_POLICY = "core_policy"
#: who wins when two entries contradict: a core policy, then an approved org skill, then a
#: lesson (among lessons, the one ranked first)
PRECEDENCE = {CORE_POLICY: 0, ORG_SKILL: 1, LESSON: 2}
APPROVAL_TAG = "approval:"


@dataclass(frozen=True)
class AdvisingEntry:
    kind: str  # LESSON, ORG_SKILL or CORE_POLICY
    ref: str  # memory id, fact id or policy id
    content: str
    advice: Advice
    agent: str = ""  # a lesson's agent

    def as_dict(self, reason: str = "") -> dict:
        data = {"kind": self.kind, "ref": self.ref, "content": self.content}
        if self.agent:
            data["agent"] = self.agent
        if reason:
            data["reason"] = reason
        return data


def lesson_advice(lesson: ProceduralLesson) -> Advice:
    """A lesson's stored advice; a lesson from before advice was stored: its ``Do:`` tier."""
    return Advice.from_dict(lesson.advice) or advice_from_text(f"Do: {lesson.action}")


def skill_advice_of(facts: Sequence[OrgFact]) -> dict[str, Advice]:
    """Each procedure fact's advice by fact id: its stored skill's (an approved skill, while
    the fact is the version it was published as), else its approval item's, else read from
    its text (free text a person published as a fact)."""
    structured = {
        str(fact_id): advice
        for fact_id, version, advice in OrgSkill.objects.filter(
            fact_id__in=[f.fact_id for f in facts]
        ).values_list("fact_id", "fact_version", "advice")
        if advice and any(f.fact_id == fact_id and f.version == version for f in facts)
    }
    item_of = {}
    for fact in facts:
        for tag in fact.tags:
            if tag.startswith(APPROVAL_TAG):
                item_of[str(fact.fact_id)] = tag[len(APPROVAL_TAG) :]
    stored = {}
    if item_of:
        ids = [i for i in item_of.values() if _uuid_like(i)]
        for pk, metadata in ApprovalItem.objects.filter(pk__in=ids).values_list("pk", "metadata"):
            advice = Advice.from_dict(((metadata or {}).get("proposal") or {}).get("advice"))
            if advice is not None:
                stored[str(pk)] = advice
    return {
        str(f.fact_id): Advice.from_dict(structured.get(str(f.fact_id)))
        or stored.get(item_of.get(str(f.fact_id), ""))
        or advice_from_text(f.content)
        for f in facts
    }


def pool_skill_advice(rows: Iterable[OrgSkill]) -> dict[str, Advice]:
    """Each lesson-pool skill's advice by its memory id: what its structure stored, else its
    ``Do:`` tier."""
    return {
        str(row.memory_id): Advice.from_dict(row.advice) or advice_from_text(f"Do: {row.action}")
        for row in rows
        if row.memory_id is not None
    }


def _uuid_like(text: str) -> bool:
    return len(text) == 36 and text.count("-") == 4


def advising_entries(
    *, company: Company, about: Advice | None = None, now: datetime | None = None
) -> list[AdvisingEntry]:
    """Every live lesson, org skill and core policy of ``company`` with its advice;
    ``about``: only the lessons whose error category can meet that advice's."""
    now = now or timezone.now()
    entries: list[AdvisingEntry] = []
    for policy in policies(company=company):
        entries.append(
            AdvisingEntry(CORE_POLICY, policy.id, policy.content, advice_from_text(policy.content))
        )
    facts = list(
        OrgFact.objects.filter(
            company=company, category=OrgFactCategory.PROCEDURE, retracted_at__isnull=True
        ).order_by("created_at")
    )
    advice_by_fact = skill_advice_of(facts)
    for fact in facts:
        entries.append(
            AdvisingEntry(
                ORG_SKILL, str(fact.fact_id), fact.content, advice_by_fact[str(fact.fact_id)]
            )
        )
    pool = list(
        org_skills(company=company, now=now)
        .filter(source=OrgSkill.Source.LESSON_POOL)
        .order_by("created_at", "id")
    )
    advice_by_memory = pool_skill_advice(pool)
    for row in pool:
        ref = str(row.memory_id)
        entries.append(AdvisingEntry(ORG_SKILL, ref, row.discovery, advice_by_memory[ref]))
    lessons = (
        ProceduralLesson.objects.filter(live_q(now, "memory__"), company=company)
        .exclude(memory_id__in=[row.memory_id for row in pool])
        .select_related("memory__agent")
        .order_by("created_at", "memory_id")
    )
    category = about.situation.error_category if about is not None else ""
    if category:
        lessons = lessons.filter(
            Q(advice__situation__error_category__iexact=category)
            | Q(advice__situation__error_category="")
            | Q(advice={})
        )
    for lesson in lessons:
        entries.append(
            AdvisingEntry(
                LESSON,
                str(lesson.memory_id),
                lesson.discovery,
                lesson_advice(lesson),
                agent=lesson.memory.agent.name,
            )
        )
    return entries


def contradicted_by(advice: Advice, entries: Iterable[AdvisingEntry]) -> list[dict]:
    """The entries ``advice`` contradicts, each with why (for an approval item's evidence)."""
    found = []
    for entry in entries:
        clash = contradiction(advice, entry.advice)
        if clash is not None:
            found.append(entry.as_dict(clash.reason()))
    return found
