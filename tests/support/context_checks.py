"""Does an agent's context read well? (what the first-week scenario and the demo assert)

* **no contradicting pair** among the entries delivered (lessons by their stored advice, org
  skills by their approval's advice or text, core policies by their text:
  :mod:`memory.procedural.contradictions`);
* **nothing internal**: no ids (UUIDs, ``run `abcd1234```), no journal bookkeeping
  ("4 added, 0 already known");
* **no cut word**: nothing shortened at all in the text (the demo's and the scenario's
  memories are short; a cut at a word boundary would still show a mark).
"""

from __future__ import annotations

import re

from memory.procedural.advice import advice_from_text, contradiction
from memory.procedural.contradictions import lesson_advice, skill_advice_of
from memory.procedural.models import ProceduralLesson
from orgmemory.models import OrgFact

INTERNAL = [
    re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
    re.compile(r"\(run `[0-9a-f]+`\)|\brun `[0-9a-f]{6,}`"),
    re.compile(r"\b\d+ added, \d+ already known\b"),
    re.compile(r"\[extractive\]|\bAnchors:|\[(?:start|mid|end)\] "),
]
CUT = "…"


def context_problems(included: list[dict], messages: list[dict]) -> list[str]:
    """``included``: the context's included entries (``id``/``kind`` as the API gives them);
    ``messages``: its chat messages (the first one pins the core policies)."""
    problems: list[str] = []
    text = "\n".join(m["content"] for m in messages)
    for pattern in INTERNAL:
        for found in pattern.findall(text):
            problems.append(f"internal: {found!r}")
    if CUT in text:
        at = text.index(CUT)
        problems.append(f"cut: {text[max(0, at - 40) : at + 1]!r}")
    advised = []
    lesson_ids = [e["id"] for e in included if e["kind"] == "memory"]
    for lesson in ProceduralLesson.objects.filter(memory_id__in=lesson_ids):
        advised.append((f"lesson {lesson.memory_id}", lesson_advice(lesson)))
    fact_ids = [e["id"].removeprefix("fact:") for e in included if e["kind"] == "org_fact"]
    facts = list(OrgFact.objects.filter(fact_id__in=fact_ids, category="procedure"))
    for fact_id, advice in skill_advice_of(facts).items():
        advised.append((f"org skill {fact_id}", advice))
    pinned = [m["content"] for m in messages if "Company policies" in m["content"]]
    advised += [("core policies", advice_from_text(block)) for block in pinned]
    for i, (name, advice) in enumerate(advised):
        for other, theirs in advised[i + 1 :]:
            clash = contradiction(advice, theirs)
            if clash is not None:
                problems.append(f"contradiction: {name} / {other}: {clash.reason()}")
    return problems
