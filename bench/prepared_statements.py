"""The small hot statements, client-bound against prepared (issue 35).

A search's planning round trip (its lexemes, the scope's row counts, a running re-embedding
job: ``memory.core.selectors.search.legs._plan``) and every API request's verified-key check
(``persistence.selectors.verified_keys``) are small statements whose planning cost more than
running them. This script times each one as Django sends it (client-bound text) and as
:func:`synthorg.db.prepared.execute_prepared` sends it (a prepared statement of the
connection), ``--calls`` round trips per side and round, the two sides alternating in order
per round, on one connection of the embedded server (warm: the first calls of each round
are not timed). The figure is the client's wall time per round trip: the statement's
parse, analysis, planning and execution on the server plus the round trip itself.

    python bench/prepared_statements.py --out bench/results/kernel/prepared_statements.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

from bench.locomo import log  # noqa: E402

QUESTION = "what did the team decide about the deploy schedule last week"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument(
        "--out", default=str(ROOT / "bench/results/kernel/prepared_statements.json")
    )
    args = parser.parse_args()

    from django.db import connection

    from memory.core.selectors.reembed import reembedding_sql
    from memory.core.selectors.search.dense import scope_rows_sql
    from memory.core.selectors.search.scope import private_part, shared_part
    from persistence.selectors.verified_keys import _CHECK_SQL
    from synthorg.db.prepared import execute_prepared
    from synthorg.embedding.minilm_onnx import MINILM_EMBEDDER_ID
    from synthorg.retrieval.lexemes import QUERY_LEXEMES_EXPR

    # The planning statement of a search over an agent's private rows and its company's
    # shared rows, with the dense leg on (ids need not exist: the plan is the same).
    parts = [private_part(1, 1), shared_part(1)]
    count_exprs, count_params = scope_rows_sql(parts)
    job_expr, job_params = reembedding_sql(1, MINILM_EMBEDDER_ID, 384)
    plan_sql = "SELECT " + ", ".join([QUERY_LEXEMES_EXPR, *count_exprs, job_expr])
    plan_params = [QUESTION, *count_params, *job_params]
    statements = {
        "search planning round trip": (plan_sql, plan_params, "%tsvector_to_array%reembedjob%"),
        "verified-key check": (_CHECK_SQL, [1, "0" * 64], "%ctid%WHERE k.id =%"),
    }

    def client_bound(sql, params):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def prepared(sql, params):
        return execute_prepared(connection, sql, params)

    sides = {"client-bound": client_bound, "prepared": prepared}
    out: dict = {
        "command": "bench/prepared_statements.py " + " ".join(sys.argv[1:]),
        "calls_per_round": args.calls,
        "rounds": args.rounds,
        "load_average_start": list(os.getloadavg()),
        "statements": {},
    }
    for name, (sql, params, pattern) in statements.items():
        per_round: dict[str, list[float]] = {side: [] for side in sides}
        for round_index in range(args.rounds):
            order = list(sides) if round_index % 2 == 0 else list(reversed(sides))
            for side in order:
                run = sides[side]
                for _ in range(20):  # warm: prepared after psycopg's threshold
                    run(sql, params)
                t0 = time.perf_counter()
                for _ in range(args.calls):
                    run(sql, params)
                per_round[side].append((time.perf_counter() - t0) * 1000 / args.calls)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT custom_plans, generic_plans FROM pg_prepared_statements "
                "WHERE statement LIKE %s",
                [pattern],
            )
            plans = cursor.fetchall()
        medians = {side: statistics.median(values) for side, values in per_round.items()}
        out["statements"][name] = {
            "ms_per_round_trip_by_round": {
                side: [round(v, 4) for v in values] for side, values in per_round.items()
            },
            "median_ms": {side: round(v, 4) for side, v in medians.items()},
            "prepared_over_client_bound": round(medians["prepared"] / medians["client-bound"], 3),
            "prepared_wins_every_round": all(
                p < c for p, c in zip(per_round["prepared"], per_round["client-bound"], strict=True)
            ),
            "prepared_plans_custom_generic": plans[0] if plans else None,
        }
        log(f"{name}: {out['statements'][name]['median_ms']}")
    out["load_average_end"] = list(os.getloadavg())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
