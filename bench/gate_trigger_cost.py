"""What the write gate's change counter (migration 0027) costs a memory insert::

    python bench/gate_trigger_cost.py [--inserts 500] [--rounds 6] \
        --out bench/results/gate_trigger_cost.json

The HTTP A/B of the second-pass skip (``bench/http_load.py --variants asgi=BASE,asgi``)
serves both checkouts from one database, so both pay the counter's triggers and the A/B
does not show their cost. This measures it alone: on a throw-away database, one memory of
one agent is copied ``--inserts`` times, one single-row ``INSERT`` statement each (a store
of one memory writes its row in one statement), with the counter's insert trigger enabled
and disabled in alternating rounds, inside a transaction rolled back at the end. Reports
the PostgreSQL execution time per insert (``clock_timestamp()`` inside one ``DO`` block,
no round trips) for both, and the difference. JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

LOOP = """
DO $$
DECLARE began timestamptz := clock_timestamp();
BEGIN
    FOR i IN 1..{inserts} LOOP
        UPDATE gate_cost_row SET id = gen_random_uuid();
        INSERT INTO memory_memory SELECT * FROM gate_cost_row;
    END LOOP;
    PERFORM set_config('gate_cost.ms',
        (extract(epoch FROM clock_timestamp() - began) * 1000)::text, true);
END $$;
"""


def run(inserts: int, rounds: int) -> dict:
    import django

    django.setup()
    from django.db import connection, transaction

    from bench.scratch_db import scratch_database
    from memory.core.domain import MemoryStoreRequest
    from memory.core.services.store import memory_store
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create
    from synthorg.db import roles

    per_insert: dict[str, list[float]] = {"trigger_on": [], "trigger_off": []}
    with scratch_database("gate_cost"):
        company = company_create(name="gate cost", slug="gate-cost")
        agent = agent_create(company=company, name="bench", memory_level="persistent")
        memory_store(
            agent=agent,
            request=MemoryStoreRequest(
                content="The release train leaves Tuesdays.", category="semantic"
            ),
        )
        with roles.owner_connection() as owner, transaction.atomic(), owner.cursor() as cursor:
            # Django's foreign keys are deferred; ALTER TABLE refuses pending trigger events
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(
                "CREATE TEMP TABLE gate_cost_row ON COMMIT DROP AS "
                "SELECT * FROM memory_memory LIMIT 1"
            )
            for n in range(rounds * 2):
                on = n % 2 == 0
                cursor.execute(
                    f"ALTER TABLE memory_memory {'ENABLE' if on else 'DISABLE'} "
                    "TRIGGER memory_gate_scope_inserted"
                )
                cursor.execute(LOOP.format(inserts=inserts))
                cursor.execute("SELECT current_setting('gate_cost.ms')::float8")
                ms = cursor.fetchone()[0]
                per_insert["trigger_on" if on else "trigger_off"].append(ms / inserts)
            transaction.set_rollback(True)
        connection.close()
    on, off = (sorted(per_insert[k]) for k in ("trigger_on", "trigger_off"))
    median = lambda xs: xs[len(xs) // 2]  # noqa: E731
    return {
        "benchmark": "gate_trigger_cost",
        "inserts_per_round": inserts,
        "rounds_each": rounds,
        "ms_per_insert": {k: [round(x, 4) for x in v] for k, v in per_insert.items()},
        "median_ms_per_insert_trigger_on": round(median(on), 4),
        "median_ms_per_insert_trigger_off": round(median(off), 4),
        "median_trigger_cost_ms": round(median(on) - median(off), 4),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inserts", type=int, default=500)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--out", default="bench/results/gate_trigger_cost.json")
    args = p.parse_args()
    report = run(args.inserts, args.rounds)
    report["command"] = "python bench/gate_trigger_cost.py " + " ".join(sys.argv[1:])
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "ms_per_insert"}))


if __name__ == "__main__":
    main()
