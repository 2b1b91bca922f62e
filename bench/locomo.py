"""LoCoMo-format retrieval benchmark: ingest each conversation as one agent's memories
through the store service, ask every question (categories 1–4) through the search
pipeline, score whether the evidence turns come back.

Data is read from the path given; nothing from it is copied into the project.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SCORED_CATEGORIES = (1, 2, 3, 4)
DEFAULT_KS = (1, 5, 10, 20)
BATCH = 500
#: the retrieval config fields a run reports as effective
EFFECTIVE_FIELDS = {"fusion_strategy", "rrf_k", "min_relevance", "personal_boost", "speaker_boost"}


@dataclass
class Turn:
    dia_id: str
    content: str
    context: str
    created_at: datetime
    #: who said it: stored as the memory's ``speaker:`` tag, as verbatim ingestion does
    speaker: str = ""


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[dict[str, Any]] = field(default_factory=list)

    def anchor_of(self, qa: dict[str, Any]) -> datetime | None:
        """The date a question's time words are relative to: its ``question_date``
        (LongMemEval), else the conversation's last turn (LoCoMo's questions carry none)."""
        if qa.get("question_date"):
            return parse_session_date(qa["question_date"])
        return self.turns[-1].created_at if self.turns else None


def parse_session_date(value: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → an aware UTC datetime."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(speaker: str, text: str, caption: str | None) -> str:
    body = f"{speaker}: {text}"
    if caption:
        body += f" [shares image: {caption}]"
    return body


def load_conversations(
    path: str | Path, *, ids: set[str] | None = None, with_context: bool = True
) -> list[Conversation]:
    """Each session turn becomes ``"[<session date>] <speaker>: <text> [shares image: …]"``,
    created at the session's time (+1 s per turn to keep order), spoken by its speaker (the
    ``speaker:`` tag), with the previous turn of the session as its ``context`` (the message
    it answers) when ``with_context``."""
    data = json.loads(Path(path).read_text())
    conversations = []
    for sample in data:
        if ids and sample["sample_id"] not in ids:
            continue
        conv = sample["conversation"]
        turns: list[Turn] = []
        index = 1
        while f"session_{index}" in conv:
            date_text = conv[f"session_{index}_date_time"]
            start = parse_session_date(date_text)
            previous = ""
            for position, turn in enumerate(conv[f"session_{index}"]):
                text = turn_text(turn["speaker"], turn["text"], turn.get("blip_caption"))
                turns.append(
                    Turn(
                        dia_id=turn["dia_id"],
                        content=f"[{date_text}] {text}",
                        context=previous if with_context else "",
                        created_at=start + timedelta(seconds=position),
                        speaker=turn["speaker"],
                    )
                )
                previous = text[:4000]
            index += 1
        questions = [q for q in sample["qa"] if q.get("category") in SCORED_CATEGORIES]
        conversations.append(Conversation(sample["sample_id"], turns, questions))
    return conversations


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def progress(label: str, done: int, total: int, width: int = 30) -> None:
    """A one-line progress bar on stderr (redrawn in place on a terminal, else one line
    per call), for every long benchmark loop."""
    filled = int(width * done / total) if total else width
    line = f"{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
    if sys.stderr.isatty():
        print("\r" + line, end="\n" if done >= total else "", file=sys.stderr, flush=True)
    else:
        print(line, file=sys.stderr, flush=True)


def store_turns(agent, turns: list[Turn], *, label: str) -> dict[str, Any]:
    """Store ``turns`` as the agent's episodic memories through ``memory_store_batch``
    (batches of ``BATCH``), each tagged with its speaker; returns the memory id of each
    turn's ``dia_id``."""
    from memory.core.domain import MemoryStoreRequest
    from memory.core.retrieval.speakers import speaker_tag
    from memory.core.services.store import memory_store_batch

    ids: dict[str, Any] = {}
    for start in range(0, len(turns), BATCH):
        chunk = turns[start : start + BATCH]
        results = memory_store_batch(
            agent=agent,
            requests=[
                MemoryStoreRequest(
                    content=t.content,
                    context=t.context,
                    category="episodic",
                    created_at=t.created_at,
                    tags=(speaker_tag(t.speaker),) if t.speaker else (),
                )
                for t in chunk
            ],
        )
        for turn, result in zip(chunk, results, strict=True):
            ids[turn.dia_id] = result.id
        progress(label, min(start + BATCH, len(turns)), len(turns))
    return ids


def found_at(ranked: list[Any], evidence: list[Any], k: int) -> tuple[bool, bool]:
    """Whether the top ``k`` of ``ranked`` hold any / all of the ``evidence`` memory ids (an
    evidence turn that was never stored, ``None``, makes "all" unreachable)."""
    wanted = {e for e in evidence if e is not None}
    top = set(ranked[:k])
    return bool(wanted & top), len(wanted) == len(evidence) and wanted <= top


@dataclass
class RecallTally:
    """recall_any/all@k over the questions added, and per category at @10, each counted by
    :func:`found_at`: the one tally of ``run_locomo`` and of the benchmarks that re-order or
    re-embed the turns outside it."""

    ks: Sequence[int]
    questions: int = 0
    hits_any: dict[int, int] = field(default_factory=dict)
    hits_all: dict[int, int] = field(default_factory=dict)
    by_category: dict[int, dict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: {"count": 0, "any": 0, "all": 0})
    )

    def __post_init__(self) -> None:
        self.hits_any = {k: 0 for k in self.ks}
        self.hits_all = {k: 0 for k in self.ks}

    def add(self, category: int, ranked: list[Any], evidence: list[Any]) -> tuple[bool, bool]:
        """Count one question; returns whether its top 10 holds any / all of the evidence."""
        self.questions += 1
        self.by_category[category]["count"] += 1
        at10 = found_at(ranked, evidence, 10)
        for k in self.ks:
            found_any, found_all = at10 if k == 10 else found_at(ranked, evidence, k)
            self.hits_any[k] += found_any
            self.hits_all[k] += found_all
        self.by_category[category]["any"] += at10[0]
        self.by_category[category]["all"] += at10[1]
        return at10

    def summary(self) -> dict[str, Any]:
        def ratio(n: int) -> float:
            return round(n / self.questions, 4) if self.questions else 0.0

        return {
            "questions": self.questions,
            "recall_any": {str(k): ratio(self.hits_any[k]) for k in self.ks},
            "recall_all": {str(k): ratio(self.hits_all[k]) for k in self.ks},
            "by_category": at10_table(self.by_category),
        }


def at10_table(tallies: dict[Any, dict[str, int]]) -> dict[str, dict[str, Any]]:
    """``{key: {count, any, all}}`` → ``{key: {count, recall_any@10, recall_all@10}}``."""
    return {
        str(key): {
            "count": v["count"],
            "recall_any@10": round(v["any"] / v["count"], 4) if v["count"] else 0.0,
            "recall_all@10": round(v["all"] / v["count"], 4) if v["count"] else 0.0,
        }
        for key, v in sorted(tallies.items())
    }


def recall_table(rows: Iterable[tuple[int, list[Any], list[Any]]], ks: Sequence[int]) -> dict:
    """:class:`RecallTally` over ``rows`` of (category, ranked ids, evidence ids)."""
    tally = RecallTally(ks)
    for category, ranked, evidence in rows:
        tally.add(category, ranked, evidence)
    return tally.summary()


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1))))
    return ordered[rank]


def run_locomo(
    *,
    data: str,
    conversation_ids: set[str] | None,
    mode: str,
    ks: tuple[int, ...],
    with_context: bool,
    retrieval: dict[str, Any],
    leg_depth: int | None = None,
    samples: bool = False,
    question_limit: int | None = None,
    llm: str = "none",
    chunking: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``samples``: also return every search time and the ingest seconds (to pool runs).
    ``question_limit``: ask at most that many questions per conversation. When ``retrieval``
    selects the hierarchical retriever or the LLM re-ranking, every question goes through
    the context strategy's retrieval (:func:`memory.prompting.context.retrieve_ranked`)
    instead of ``memory_search``; ``llm`` says which LLM it may use ("none" or "standin",
    see :mod:`bench.retrieval`).

    Writes companies, agents and memories: run it inside ``bench.scratch_db.scratch_database``
    (the scripts do), never on the user's database."""
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import memory_search
    from memory.prompting.context import retrieve_ranked
    from persistence.selectors.config import company_config
    from persistence.selectors.embedder import company_embedder
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create

    legs = {"hybrid": ("dense", "sparse"), "dense": ("dense",), "sparse": ("sparse",)}[mode]
    conversations = load_conversations(data, ids=conversation_ids, with_context=with_context)
    if not conversations:
        raise ValueError("no conversation of the data file matches --conversations")
    max_k = max(ks)
    run_tag = uuid.uuid4().hex[:8]
    tally = RecallTally(ks)
    by_conversation: dict[str, dict[str, int]] = defaultdict(
        lambda: {"count": 0, "any": 0, "all": 0}
    )
    search_ms: list[float] = []
    ingest_seconds = 0.0
    ingested = 0
    unanswerable = 0
    embedder_id = ""
    effective: dict[str, Any] = {}
    pipeline = retrieval.get("retriever") == "hierarchical" or bool(
        retrieval.get("query_specific_rerank_enabled")
    )
    traces: dict[str, int] = defaultdict(int)
    chunking_effective: dict[str, Any] = {}
    for conv in conversations:
        company = company_create(
            name=f"bench {conv.sample_id} {run_tag}",
            slug=f"bench-{conv.sample_id}-{run_tag}".lower(),
            config={"memory": {"retrieval": retrieval, "chunking": chunking or {}}},
        )
        agent = agent_create(
            company=company, name=f"locomo-{conv.sample_id}", memory_level="persistent"
        )
        embedder = company_embedder(company)
        embedder.embed(["warm up"])
        embedder_id = embedder.embedder_id
        started = time.perf_counter()
        ids = store_turns(agent, conv.turns, label=f"{conv.sample_id} ingest")
        ingest_seconds += time.perf_counter() - started
        ingested += len(conv.turns)
        log(
            f"{conv.sample_id}: ingested {len(conv.turns)} turns "
            f"({len(conv.turns) / max(time.perf_counter() - started, 1e-9):.0f}/s)"
        )
        from synthorg.db.roles import owner_execute

        owner_execute("ANALYZE memory_memory")  # statistics: the owner's right
        # The sparse leg reuses the lexeme statistics for LEXEME_STATS_TTL_S; a service
        # reads autovacuum's fresh ones within that time, this run re-reads them at once.
        from memory.core.selectors.search import sparse as sparse_module

        sparse_module._lexeme_stats = (float("-inf"), {})
        config = company_config(company).memory.retrieval
        chunking_effective = company_config(company).memory.chunking.model_dump(mode="json")
        effective = config.model_dump(
            mode="json",
            include=EFFECTIVE_FIELDS,
        )
        asked = conv.questions[:question_limit] if question_limit else conv.questions
        for position, qa in enumerate(asked, start=1):
            if position % 25 == 0 or position == len(asked):
                progress(f"{conv.sample_id} search", position, len(asked))
            evidence = [ids.get(e) for e in qa.get("evidence") or []]
            if not evidence:
                unanswerable += 1
                continue
            started = time.perf_counter()
            query = MemoryQuery(text=str(qa["question"]), limit=max_k)
            if pipeline:
                hits, degraded, _reembedding, trace = retrieve_ranked(
                    agent=agent, query=query, config=config
                )
                for flag in degraded:
                    traces[f"degraded:{flag}"] += 1
                for key in ("routing", "judgement", "rerank"):
                    if trace and key in trace:
                        traces[f"{key}:{trace[key]}"] += 1
                if trace and trace.get("retries"):
                    traces["retries"] += trace["retries"]
            else:
                hits = memory_search(
                    agent=agent, query=query, config=config, legs=legs, leg_depth=leg_depth,
                    anchor_time=conv.anchor_of(qa),
                ).hits  # fmt: skip
            search_ms.append((time.perf_counter() - started) * 1000)
            ranked = [hit.memory.pk for hit in hits]
            found_any, found_all = tally.add(int(qa["category"]), ranked, evidence)
            by_conversation[conv.sample_id]["any"] += found_any
            by_conversation[conv.sample_id]["all"] += found_all
            by_conversation[conv.sample_id]["count"] += 1
        log(f"{conv.sample_id}: {len(asked)} questions asked")

    pooled = (
        {
            "search_ms_samples": search_ms,
            "ingest_seconds": ingest_seconds,
            "hits_any@10": tally.hits_any.get(10),
            "hits_all@10": tally.hits_all.get(10),
        }
        if samples
        else {}
    )
    summary = tally.summary()
    return pooled | {
        "questions": summary["questions"],
        "skipped_without_evidence": unanswerable,
        "recall_any": summary["recall_any"],
        "recall_all": summary["recall_all"],
        "by_category": summary["by_category"],
        "by_fold": _by_fold(data, by_conversation),
        "by_conversation": at10_table(by_conversation),
        "search_ms": {
            "p50": round(percentile(search_ms, 50), 2),
            "p95": round(percentile(search_ms, 95), 2),
            "mean": round(statistics.fmean(search_ms), 2) if search_ms else 0.0,
        },
        "ingest_per_s": round(ingested / ingest_seconds, 1) if ingest_seconds else 0.0,
        "memories": ingested,
        "mode": mode,
        "embedder": embedder_id,
        "context": with_context,
        "retrieval_config": retrieval,
        "effective_retrieval": effective,
        "chunking": chunking_effective,
        "leg_depth": leg_depth,
        "question_limit": question_limit,
        "llm": llm if pipeline else "none",
        "pipeline": "retrieve_ranked" if pipeline else "memory_search",
        "trace_counts": dict(sorted(traces.items())),
        "conversations": [c.sample_id for c in conversations],
        "data": Path(data).name,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }


def _by_fold(data: str, by_conversation: dict[str, dict[str, int]]) -> dict[str, Any]:
    """recall_any/all@10 per fold of the split (:mod:`bench.folds`), and the spread (max −
    min) of each over the folds."""
    from bench.folds import assign_folds

    folds = assign_folds(data)
    tallies: dict[int, dict[str, int]] = defaultdict(lambda: {"count": 0, "any": 0, "all": 0})
    for conversation, tally in by_conversation.items():
        for key in ("count", "any", "all"):
            tallies[folds[conversation]][key] += tally[key]
    rows = at10_table(tallies)
    spread = {
        key: round(max(r[key] for r in rows.values()) - min(r[key] for r in rows.values()), 4)
        for key in ("recall_any@10", "recall_all@10")
    } if rows else {}  # fmt: skip
    return {"folds": rows, "spread": spread}
