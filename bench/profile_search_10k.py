"""Where the milliseconds of one 10k-memory search go (issue 35).

The 10k scale benchmark (``bench/retrieval.py --scale 10000``) times two things per query:
the **query embedding** alone (``real.embed_one(text)``) and the **search**
(``memory_search`` with a query embedder that runs the same model on the same text, then
returns a synthetic vector). This script loads the same synthetic 10k memories for one agent
(``bench/scale_search.py``), runs the same kind of query and reports, in one run:

* both timers (p50/p95) and their ratio;
* the pipeline's own stage timings (``SearchResult.timings``) and what is left outside them;
* cProfile of the search calls (top functions by cumulative and by own time);
* ``EXPLAIN (ANALYZE, BUFFERS)`` of the planning statement and the search statement of one
  query, under the settings the pipeline sends with it.

    python bench/profile_search_10k.py --queries 100 --out bench/results/profile_search_10k.json

Everything runs in a throw-away database (``bench/scratch_db.py``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402

from bench.locomo import log, percentile  # noqa: E402
from bench.scratch_db import scratch_database  # noqa: E402

QUESTIONS = [
    "When did Caroline go to the LGBTQ support group?",
    "What did the team decide about the deployment schedule last week?",
    "Which database does the billing service use?",
    "Who owns the onboarding checklist?",
]


def _spread(values: list[float]) -> dict:
    return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2)}


def _top(profile: cProfile.Profile, key: str, calls: int, n: int = 20) -> list[dict]:
    stats = pstats.Stats(profile, stream=io.StringIO())
    rows = []
    for (path, line, name), (_cc, nc, tt, ct, _callers) in stats.stats.items():
        rows.append(
            {
                "function": f"{Path(path).name}:{line}({name})",
                "calls_per_search": round(nc / calls, 2),
                "own_ms_per_search": round(tt * 1000 / calls, 3),
                "cumulative_ms_per_search": round(ct * 1000 / calls, 3),
            }
        )
    field = "cumulative_ms_per_search" if key == "cumulative" else "own_ms_per_search"
    return sorted(rows, key=lambda r: -r[field])[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", default=str(ROOT / "bench/results/profile_search_10k.json"))
    args = parser.parse_args()

    from django.db import connection

    from bench.scale_search import CLUSTERS, DIMS, SEED, WORDS, _Fixed, _load, _noisy
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import legs as legs_module
    from memory.core.selectors.search import memory_search
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create
    from synthorg.embedding import default_embedder, query_embedding_cache

    rng = np.random.default_rng(SEED)
    centres = rng.normal(size=(CLUSTERS, DIMS))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vocab = [f"w{i}" for i in range(WORDS)]
    real = default_embedder()
    real.warm_up()

    class Embedding(_Fixed):
        """The real model on the text (honest latency), then the synthetic vector."""

        def embed(self, texts):
            real.embed(list(texts))
            return super().embed(texts)

        def embed_one(self, text):
            return self.embed([text])[0]

    # What the pipeline sends: the search statement and its settings (recorded, then run
    # as the pipeline runs them).
    sent: list[tuple[str, list, dict, str]] = []
    prepared = legs_module._execute_prepared

    def recording_prepared(sql, params, settings=None, plan_cache_mode=None):
        mode = plan_cache_mode or legs_module.PLAN_CACHE_MODE
        sent.append((sql, params, dict(settings or {}), mode))
        return prepared(sql, params, settings, plan_cache_mode=mode)

    legs_module._execute_prepared = recording_prepared

    out: dict = {"size": args.size, "queries": args.queries}
    with scratch_database("profile10k"):
        company = company_create(name="profile 10k", slug="profile-10k", config={})
        agent = agent_create(company=company, name="p10k", memory_level="persistent")
        log(f"loading {args.size} memories")
        _load(company, [agent], args.size, centres, vocab, rng)
        embed_ms, search_ms, outside_ms, stages = [], [], [], {}
        profile = cProfile.Profile()
        embedders = []
        for q in range(args.queries + 10):
            text = QUESTIONS[q % len(QUESTIONS)] + " " + vocab[int(rng.integers(0, 200))]
            embedder = Embedding(_noisy(centres[rng.integers(0, CLUSTERS, size=1)], rng)[0])
            embedders.append((text, embedder))
            t0 = time.perf_counter()
            real.embed_one(text)
            e = (time.perf_counter() - t0) * 1000
            query_embedding_cache.clear()
            t0 = time.perf_counter()
            result = memory_search(
                agent=agent, query=MemoryQuery(text=text, limit=10), embedder=embedder,
                include_shared=False,
            )  # fmt: skip
            s = (time.perf_counter() - t0) * 1000
            if q < 10:  # warm-up
                continue
            embed_ms.append(e)
            search_ms.append(s)
            t = result.timings
            inside = t["plan_ms"] + t["embed_wait_ms"] + t["legs_ms"] + t["fuse_ms"]
            inside += t["hydrate_ms"]
            outside_ms.append(s - inside)
            for stage, value in t.items():
                stages.setdefault(stage, []).append(value)
        # cProfile on the same kind of searches (separately: it slows what it measures)
        for text, embedder in embedders[10:]:
            query_embedding_cache.clear()
            profile.enable()
            memory_search(
                agent=agent, query=MemoryQuery(text=text, limit=10), embedder=embedder,
                include_shared=False,
            )  # fmt: skip
            profile.disable()
        out |= {
            "search_ms": _spread(search_ms),
            "query_embedding_ms": _spread(embed_ms),
            "ratio_p95": round(percentile(search_ms, 95) / percentile(embed_ms, 95), 2),
            "ratio_p50": round(percentile(search_ms, 50) / percentile(embed_ms, 50), 2),
            "stage_ms": {stage: _spread(values) for stage, values in stages.items()},
            "outside_stages_ms": _spread(outside_ms),
            "cprofile_top_cumulative": _top(profile, "cumulative", len(embedders) - 10),
            "cprofile_top_own": _top(profile, "own", len(embedders) - 10),
            "dense_paths": result.dense_paths,
        }
        # The recorded search statements again, alone (no embedding running): the
        # statement's own round trip, against its time inside the searches.
        replay = []
        for sql, params, settings, mode in sent[-args.queries :]:
            t0 = time.perf_counter()
            prepared(sql, params, settings, plan_cache_mode=mode)
            replay.append((time.perf_counter() - t0) * 1000)
        out["statement_alone_ms"] = _spread(replay)
        # EXPLAIN the last query's statements, under the settings they ran with.
        sql, params, settings, mode = sent[-1]
        plans = {}
        with connection.cursor() as cursor, django.db.transaction.atomic():
            for name, value in settings.items():
                cursor.execute("SELECT set_config(%s, %s, true)", [name, value])
            for _ in range(3):  # warm
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) " + sql, params)
                plan = [row[0] for row in cursor.fetchall()]
            plans["search_statement"] = plan
            plans["settings"] = settings
            plans["plan_cache_mode"] = mode
        out["explain"] = plans
    legs_module._execute_prepared = prepared
    out |= {"load_average": os.getloadavg(), "cpus": os.cpu_count()}
    out["command"] = "bench/profile_search_10k.py " + " ".join(sys.argv[1:])
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if not k.startswith("cprofile")}, indent=2))
    for row in out["cprofile_top_cumulative"]:
        print(row)
    print("-- own")
    for row in out["cprofile_top_own"]:
        print(row)


if __name__ == "__main__":
    main()
