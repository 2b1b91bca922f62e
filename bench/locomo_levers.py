"""Retrieval levers on LoCoMo data, measured on the real legs and compared offline.

``dump_legs`` ingests every conversation through ``memory_store_batch`` once per variant
(``ctx``: each turn stored with the previous turn as its context; ``noctx``: without), and
records each question's dense and sparse ranked lists (depth 200) exactly as
``memory_search`` computes them. ``evaluate_legs`` then scores dense only, sparse only and
RRF at several ``k`` and depths — fusion is pure, so every constant is compared on the same
retrieved lists without re-ingesting.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from bench.locomo import load_conversations, log, store_turns

RRF_KS = (5, 10, 20, 40, 60)
DEPTHS = (60, 100, 200)


def dump_legs(*, data: str, variants=("ctx", "noctx"), depth: int = 200) -> dict[str, list]:
    from django.utils import timezone

    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search.legs import run_legs
    from memory.core.selectors.search.scope import private_part, scope_filters
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create

    out: dict[str, list] = {}
    for variant in variants:
        for conv in load_conversations(data, with_context=variant == "ctx"):
            tag = uuid.uuid4().hex[:6]
            company = company_create(
                name=f"levers {variant} {conv.sample_id} {tag}",
                slug=f"levers-{variant}-{conv.sample_id}-{tag}".lower(),
            )
            agent = agent_create(company=company, name="levers", memory_level="persistent")
            ids = {
                dia_id: str(mid)
                for dia_id, mid in store_turns(
                    agent, conv.turns, label=f"{variant} {conv.sample_id} ingest"
                ).items()
            }
            parts = [private_part(company.pk, agent.pk)]
            filters = scope_filters(MemoryQuery(text="x"), timezone.now())
            for qa in conv.questions:
                legs = run_legs(
                    company=company,
                    parts=parts,
                    filters=filters,
                    text=str(qa["question"]),
                    embedder=None,
                    depth=depth,
                )
                out.setdefault(variant, []).append(
                    {
                        "category": qa["category"],
                        "evidence": [ids.get(e) for e in qa.get("evidence") or []],
                        "dense": [str(i) for i, _ in legs.dense],
                        "sparse": [str(i) for i, _ in legs.sparse],
                    }
                )
            log(f"{variant} {conv.sample_id}: done")
    return out


def _recall(questions: list[dict], ranking) -> dict[str, Any]:
    n = found_any = found_all = 0
    for q in questions:
        evidence = q["evidence"]
        if not evidence:
            continue
        top = set(ranking(q)[:10])
        wanted = {e for e in evidence if e}
        n += 1
        found_any += bool(wanted & top)
        found_all += len(wanted) == len(evidence) and wanted <= top
    return {"recall_any@10": round(found_any / n, 4), "recall_all@10": round(found_all / n, 4)}


def evaluate_legs(legs: dict[str, list]) -> dict[str, Any]:
    from synthorg.retrieval.fusion import rrf_fuse

    results: dict[str, Any] = {}
    for variant, questions in legs.items():
        row: dict[str, Any] = {
            "questions": sum(1 for q in questions if q["evidence"]),
            "dense": _recall(questions, lambda q: q["dense"]),
            "sparse": _recall(questions, lambda q: q["sparse"]),
        }
        for depth in DEPTHS:
            for k in RRF_KS:
                row[f"rrf_k{k}_depth{depth}"] = _recall(
                    questions,
                    lambda q, k=k, depth=depth: [
                        i for i, _ in rrf_fuse([q["dense"][:depth], q["sparse"][:depth]], k=k)
                    ],
                )
        results[variant] = row
    return results


def run_levers(*, data: str, legs_file: str | None = None) -> dict[str, Any]:
    """Dump (or, with ``legs_file``, reuse a dump of) the legs, then evaluate them."""
    if legs_file and Path(legs_file).exists():
        legs = json.loads(Path(legs_file).read_text())
    else:
        legs = dump_legs(data=data)
        if legs_file:
            Path(legs_file).write_text(json.dumps(legs))
    return {"data": Path(data).name, "levers": evaluate_legs(legs)}
