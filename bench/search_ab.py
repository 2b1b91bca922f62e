"""Before/after comparison of the search code, interleaved in one process.

The retrieval code of each ``--base`` commit (the ``memory/core/selectors/search/`` package, or
``orgmemory/selectors/retrieval.py`` with ``--org``) is extracted with ``git show`` into a
temporary module and run side by side with the working tree on the same data and the same
queries, alternating the order per query, so machine load hits every variant alike. For
each variant: wall-clock p50/p95/mean, Python CPU and server CPU per search (the backend
process's ``utime + stime`` from ``/proc``, so the database must run on this machine), the
stage timings the code reports, and whether the top-10 results differed.

    # LoCoMo (real embedder; the query-embedding cache is cleared before every search)
    python bench/search_ab.py --data ../shared/bench-data/locomo_dev.json --base 3500307
    # synthetic 10k memories for one agent (HNSW path)
    python bench/search_ab.py --scale 10000 --queries 200 --base 3500307
    # org facts: per-query live-set ranking (7125c10) against the indexed one
    python bench/search_ab.py --org 2000 --queries 200 --base 7125c10

Writes ``bench/results/kernel/search_ab_<mode>.json`` unless ``--out`` says otherwise.
Everything runs in a throw-away database (``bench/scratch_db.py``), dropped at the end: the
user's database is never written.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from bench.locomo import load_conversations, log, percentile, store_turns  # noqa: E402
from bench.scratch_db import scratch_database  # noqa: E402

SEARCH_FILES = ("__init__", "results", "scope", "dense", "sparse", "legs", "fuse", "hydrate")
SEARCH_FILES += ("pipeline",)


def _extract(commit: str, target: Path, org: bool) -> str:
    """Write the commit's retrieval code under ``target`` as a module; return its name."""
    name = f"at_{commit[:10]}"
    if org:
        text = _git_show(commit, "orgmemory/selectors/retrieval.py")
        (target / f"{name}.py").write_text(text)
        return name
    package = target / name
    package.mkdir()
    for part in SEARCH_FILES:
        text = _git_show(commit, f"memory/core/selectors/search/{part}.py")
        (package / f"{part}.py").write_text(text.replace("memory.core.selectors.search", name))
    return name


def _git_show(commit: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


class _Backend:
    """CPU time the database backend serving this connection has used (ms)."""

    def __init__(self) -> None:
        self.refresh()

    def refresh(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self.pid = cursor.fetchone()[0]

    def cpu_ms(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


class _Recorder:
    def __init__(self, variants: list[str]) -> None:
        self.variants = variants
        self.wall = {v: [] for v in variants}
        self.python = {v: [] for v in variants}
        self.server = {v: [] for v in variants}
        self.stages: dict[str, dict[str, list[float]]] = {v: {} for v in variants}
        self.statements = {v: 0 for v in variants}
        self.differing = 0
        self.asked = 0

    def order(self) -> list[str]:
        shift = self.asked % len(self.variants)
        return self.variants[shift:] + self.variants[:shift]

    def run(self, backend: _Backend, variant: str, call, **kwargs):
        sent: list[str] = []

        def count(execute, sql, params, many, context):
            sent.append(sql)
            return execute(sql, params, many, context)

        c0, b0, t0 = time.process_time(), backend.cpu_ms(), time.perf_counter()
        with connection.execute_wrapper(count):
            result = call(**kwargs)
        self.wall[variant].append((time.perf_counter() - t0) * 1000)
        # a pipeline's settings and their restore go with the statement: not counted
        self.statements[variant] += sum(not sql.startswith("SELECT set_config(") for sql in sent)
        self.python[variant].append((time.process_time() - c0) * 1000)
        self.server[variant].append(backend.cpu_ms() - b0)
        for stage, value in getattr(result, "timings", {}).items():
            self.stages[variant].setdefault(stage, []).append(value)
        return result

    def summary(self) -> dict:
        def spread(values: list[float]) -> dict:
            return {
                "p50": round(percentile(values, 50), 2),
                "p95": round(percentile(values, 95), 2),
                "mean": round(statistics.fmean(values), 2) if values else 0.0,
            }

        return {
            "searches_per_variant": self.asked,
            "searches_with_different_top10": self.differing,
            "wall_ms": {v: spread(x) for v, x in self.wall.items()},
            "python_cpu_ms": {v: spread(x) for v, x in self.python.items()},
            # what each search sent, the pipelined settings aside: its round trips
            "statements_per_search": {
                v: round(n / self.asked, 3) if self.asked else 0.0
                for v, n in self.statements.items()
            },
            "server_cpu_ms_mean": {
                v: round(statistics.fmean(x), 2) if x else 0.0 for v, x in self.server.items()
            },
            "stages_ms": {
                v: {stage: spread(x) for stage, x in stages.items()}
                for v, stages in self.stages.items()
            },
        }


def run_locomo(searches: dict, data: str) -> dict:
    from memory.core.retrieval.query import MemoryQuery
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create
    from synthorg.db.roles import owner_execute
    from synthorg.embedding import query_embedding_cache

    recorder = _Recorder(list(searches))
    found_any = {v: 0 for v in searches}
    found_all = {v: 0 for v in searches}
    for conv in load_conversations(data, with_context=True):
        company = company_create(name=f"ab {conv.sample_id}", slug=f"ab-{conv.sample_id}".lower())
        agent = agent_create(company=company, name="ab", memory_level="persistent")
        ids = store_turns(agent, conv.turns, label=f"{conv.sample_id} ingest")
        owner_execute("ANALYZE memory_memory")
        # Each variant's sparse leg reuses the lexeme statistics for LEXEME_STATS_TTL_S; a
        # service reads autovacuum's fresh ones within that time, this run at once (as
        # bench/locomo.py does): otherwise every conversation after the first is searched
        # with statistics that do not know its speakers' names as common lexemes.
        for search in searches.values():
            sparse = sys.modules.get(search.__module__.rsplit(".", 1)[0] + ".sparse")
            if sparse is not None:
                sparse._lexeme_stats = (float("-inf"), {})
        backend = _Backend()  # the owner's statement reopened the connection
        log(f"{conv.sample_id}: {len(conv.turns)} stored; searching")
        for qa in conv.questions:
            evidence = [ids.get(e) for e in qa.get("evidence") or []]
            if not evidence:
                continue
            recorder.asked += 1
            wanted = {e for e in evidence if e is not None}
            tops = {}
            for variant in recorder.order():
                query_embedding_cache.clear()
                result = recorder.run(
                    backend,
                    variant,
                    searches[variant],
                    agent=agent,
                    query=MemoryQuery(text=str(qa["question"]), limit=10),
                )
                top = [hit.memory.pk for hit in result.hits]
                tops[variant] = top
                found_any[variant] += bool(wanted & set(top))
                found_all[variant] += len(wanted) == len(evidence) and wanted <= set(top)
            recorder.differing += len({tuple(t) for t in tops.values()}) > 1
    asked = max(recorder.asked, 1)
    return recorder.summary() | {
        "data": data,
        "recall_any@10": {v: round(n / asked, 4) for v, n in found_any.items()},
        "recall_all@10": {v: round(n / asked, 4) for v, n in found_all.items()},
    }


#: ``--time-anchored``: every query has a time anchor. The synthetic memories are created
#: one a minute from 1 January 2025 (``bench/scale_search.py``): "last week" holds none of
#: them, "3 January 2025" a day's (1,440), "January 2025" all of them (the leg compares the
#: newest ``WINDOW_ROWS_MAX``)
TIME_ANCHORED = [
    "What did the team decide about the deployment schedule last week?",
    "What did we decide about the billing service on 3 January 2025?",
    "Which database did the team choose in January 2025?",
]


def run_scale(searches: dict, size: int, queries: int, time_anchored: bool = False) -> dict:
    from bench.scale_search import (
        CLUSTERS,
        DIMS,
        SEED,
        WORDS,
        _exact_top,
        _Fixed,
        _load,
        _noisy,
    )
    from memory.core.retrieval.query import MemoryQuery
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create
    from synthorg.embedding import default_embedder, query_embedding_cache

    rng = np.random.default_rng(SEED)
    centres = rng.normal(size=(CLUSTERS, DIMS))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vocab = [f"w{i}" for i in range(WORDS)]
    real = default_embedder()
    real.warm_up()
    company = company_create(name="ab scale", slug="ab-scale")
    agent = agent_create(company=company, name="ab-scale", memory_level="persistent")
    questions = (
        TIME_ANCHORED
        if time_anchored
        else [
            "When did Caroline go to the LGBTQ support group?",
            "What did the team decide about the deployment schedule last week?",
            "Which database does the billing service use?",
            "Who owns the onboarding checklist?",
        ]
    )

    class Embedding(_Fixed):
        """Runs the real model on the text (honest latency), returns the synthetic vector."""

        def embed(self, texts):
            real.embed(list(texts))
            return super().embed(texts)

        def embed_one(self, text):
            return self.embed([text])[0]

    recorder = _Recorder(list(searches))
    _load(company, [agent], size, centres, vocab, rng)
    backend = _Backend()
    embed_ms: list[float] = []
    found = {v: 0 for v in searches}
    for q in range(queries):
        text = questions[q % len(questions)] + " " + vocab[int(rng.integers(0, 200))]
        embedder = Embedding(_noisy(centres[rng.integers(0, CLUSTERS, size=1)], rng)[0])
        # The query embedding alone, as bench/scale_search.py times it (the ratio's divisor).
        started = time.perf_counter()
        real.embed_one(text)
        embed_ms.append((time.perf_counter() - started) * 1000)
        recorder.asked += 1
        tops = {}
        for variant in recorder.order():
            query_embedding_cache.clear()
            result = recorder.run(
                backend,
                variant,
                searches[variant],
                agent=agent,
                query=MemoryQuery(text=text, limit=10),
                embedder=embedder,
                include_shared=False,
            )
            tops[variant] = [hit.memory.pk for hit in result.hits]
        recorder.differing += len({tuple(t) for t in tops.values()}) > 1
        # Dense recall@10 against an exact scan (the dense leg alone, untimed).
        exact = set(_exact_top(agent, embedder.vector, 10))
        for variant, search in searches.items():
            dense = search(
                agent=agent, query=MemoryQuery(text=text, limit=10),
                embedder=_Fixed(embedder.vector), include_shared=False, legs=("dense",),
            )  # fmt: skip
            found[variant] += len(exact & {hit.memory.pk for hit in dense.hits})
        if (q + 1) % 50 == 0:
            log(f"  {q + 1}/{queries} queries")
    summary = recorder.summary()
    embed_p95 = percentile(embed_ms, 95)
    return summary | {
        "memories": size,
        "agents": 1,
        "query_embedding_ms": {
            "p50": round(percentile(embed_ms, 50), 2),
            "p95": round(embed_p95, 2),
        },
        "search_p95_over_embedding_p95": {
            v: round(summary["wall_ms"][v]["p95"] / embed_p95, 2) for v in searches
        },
        "dense_recall_at_10_vs_exact": {
            v: round(n / (10 * max(1, queries)), 4) for v, n in found.items()
        },
    }


class _Rollback(Exception):
    pass


def run_org(queries_by_variant: dict, facts: int, queries: int) -> dict:
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from bench.orgmemory_retrieval import CATEGORIES, WORDS
    from orgmemory.domain import OrgMemoryQuery
    from orgmemory.services.facts import fact_publish
    from persistence.models import Company, CompanyMembership
    from persistence.principal import Principal

    rng = random.Random(0)
    out: dict = {"facts": facts}
    try:
        with transaction.atomic():
            company = Company.objects.create(name="ab-org", slug=f"ab-org-{uuid.uuid4().hex[:6]}")
            user = get_user_model().objects.create(username=f"ab-org-{uuid.uuid4().hex[:6]}")
            CompanyMembership.objects.create(company=company, user=user, role="admin")
            human = Principal.for_human(user, company, "admin")
            backend = _Backend()
            for mode, embeddings in (("bm25", False), ("hybrid", True)):
                settings.ORGMEMORY_EMBEDDINGS = embeddings
                for i in range(facts):
                    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))
                    fact_publish(
                        company=company,
                        actor=human,
                        content=f"{mode} fact {i}: {text}",
                        category=CATEGORIES[i % 3],
                    )
                log(f"org {mode}: {facts} facts published; querying")
                recorder = _Recorder(list(queries_by_variant))
                for _ in range(queries):
                    context = " ".join(rng.choice(WORDS) for _ in range(6))
                    recorder.asked += 1
                    seen = {}
                    for variant in recorder.order():
                        found = recorder.run(
                            backend,
                            variant,
                            queries_by_variant[variant],
                            company=company,
                            query=OrgMemoryQuery(context=context),
                        )
                        seen[variant] = tuple((view.fact_id, view.score) for view in found)
                    recorder.differing += len(set(seen.values())) > 1
                out[mode] = recorder.summary() | {"live_facts": facts * (2 if embeddings else 1)}
            raise _Rollback
    except _Rollback:
        pass
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--data", help="LoCoMo-format JSON file")
    mode.add_argument("--scale", type=int, help="synthetic memories for one agent")
    mode.add_argument("--org", type=int, help="org facts per round (BM25, then hybrid)")
    parser.add_argument("--base", action="append", required=True, help="commit to compare")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--tree-first",
        action="store_true",
        help="the working tree is the first variant (each query still alternates the order)",
    )
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--time-anchored",
        action="store_true",
        help="--scale: every query has a time anchor (an empty, a day's and a full window)",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch, scratch_database("search_ab"):
        sys.path.insert(0, scratch)
        variants = {}
        for commit in args.base:
            module = importlib.import_module(_extract(commit, Path(scratch), org=bool(args.org)))
            variants[commit] = module.query_facts if args.org else module.memory_search
        if args.org:
            from orgmemory.selectors.retrieval import query_facts

            variants["working-tree"] = query_facts
            result = run_org(variants, args.org, args.queries)
            kind = "org"
        else:
            from memory.core.selectors.search import memory_search

            variants["working-tree"] = memory_search
            if args.tree_first:
                variants = {"working-tree": memory_search} | variants
            if args.data:
                result = run_locomo(variants, args.data)
                kind = "locomo"
            else:
                result = run_scale(variants, args.scale, args.queries, args.time_anchored)
                kind = f"scale_{args.scale}"
    result |= {"variants": list(variants), "load_average": os.getloadavg(), "cpus": os.cpu_count()}
    result["command"] = "bench/search_ab.py " + " ".join(sys.argv[1:])
    out = Path(args.out) if args.out else ROOT / "bench/results/kernel" / f"search_ab_{kind}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
