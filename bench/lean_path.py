"""Each change of the hot endpoints' lean path (issue 35), before against after, in one process::

    python bench/lean_path.py [--rounds 6] --out bench/results/lean_path_components.json

``bench/http_load.py`` A/Bs the whole mix against a base checkout; the changes save fractions
of a millisecond each, less than the spread of one HTTP run. This measures each alone, on a
throw-away database seeded as ``http_load`` seeds one agent (100 memories): the code before
(inlined here: DRF's ``Field.get_attribute`` loop of ``SharedFieldsRepresentation``, the ORM
query of ``webhook_for_event``, ``AuditEntry.objects.create``) against the code of this
checkout, in ``--rounds`` alternating rounds (the order flips every round), CPU of this
process per call (``time.process_time``: the client's side; PostgreSQL's is not in it).
Each response serializer's output is asserted equal before and after. JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def ab(label: str, before, after, calls: int, rounds: int) -> dict:
    """Median and range of µs of CPU per call of ``before`` and ``after``."""
    for _ in range(50):
        before()
        after()
    sides: dict[str, list[float]] = {"before": [], "after": []}
    for index in range(rounds):
        order = ("before", "after") if index % 2 == 0 else ("after", "before")
        for side in order:
            fn = before if side == "before" else after
            began = time.process_time()
            for _ in range(calls):
                fn()
            sides[side].append((time.process_time() - began) / calls * 1e6)
    row = {"change": label, "calls_per_round": calls}
    for side, values in sides.items():
        row[f"{side}_us_median"] = round(statistics.median(values), 1)
        row[f"{side}_us_range"] = [round(min(values), 1), round(max(values), 1)]
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--out", default="bench/results/lean_path_components.json")
    args = parser.parse_args()
    for name in ("DATABASE_URL", "DATABASE_OWNER_URL", "SYNTHORG_TEST_DATABASE"):
        os.environ.pop(name, None)

    from bench import http_load as load  # django.setup()
    from bench.scratch_db import scratch_database

    load_before = os.getloadavg()
    with scratch_database("lean_path"):
        keys = load.seed(1, 100)
        rows = measure(keys[0], args.rounds)
    report = {
        "benchmark": "lean_path",
        "rows": rows,
        "rounds": args.rounds,
        "load_average_1_5_15_before": [round(x, 2) for x in load_before],
        "load_average_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python bench/lean_path.py " + " ".join(sys.argv[1:]),
    }
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


def measure(raw_key: str, rounds: int) -> list[dict]:
    from django.db import transaction
    from django.utils import timezone
    from rest_framework.fields import SkipField
    from rest_framework.relations import PKOnlyObject

    from memory.interfaces.api import serializers as s
    from memory.interfaces.api.views.retrieval import _memory_query
    from memory.interfaces.service import MemoryService
    from memory.prompting.context import ContextRequest
    from orgmemory.models import ApprovalWebhook
    from orgmemory.services.webhooks import webhook_for_event
    from persistence.models import AuditEntry
    from persistence.principal import Principal
    from persistence.selectors.identity import agent_for_api_key
    from persistence.services.audit import audit_record
    from synthorg.api.parsers import JSONBody
    from synthorg.api.serializers import SharedFieldsRepresentation

    key = agent_for_api_key(raw_key).key
    service = MemoryService(Principal.for_agent(key.agent, api_key=key))
    body = s.MemorySearchRequestSerializer(
        data=JSONBody({"query": "what happened with deploys?", "limit": 10})
    )
    body.is_valid(raise_exception=True)
    result = service.search(_memory_query(body.validated_data, service), include_shared=None)
    prepared = service.context(
        ContextRequest.build(
            query_text="prepare the deploys review",
            token_budget=800,
            categories=(),
            namespaces=service.namespaces(()),
            include_org=True,
            subject=None,
            task_id=None,
        )
    )
    after_rep = SharedFieldsRepresentation.to_representation

    def before_rep(self, instance):  # the mixin's loop before the change
        ret = {}
        for field in self.shared_readable_fields():
            try:
                attribute = field.get_attribute(instance)
            except SkipField:
                continue
            check = attribute.pk if isinstance(attribute, PKOnlyObject) else attribute
            ret[field.field_name] = None if check is None else field.to_representation(attribute)
        return ret

    def with_before(fn):
        def run():
            SharedFieldsRepresentation.to_representation = before_rep  # type: ignore[method-assign]
            try:
                return fn()
            finally:
                SharedFieldsRepresentation.to_representation = after_rep  # type: ignore[method-assign]

        return run

    def search_data():
        hits = result.hits
        payload = s.search_payload(hits, result.degraded, result.reembedding, result.adapter)
        return s.SearchResponseSerializer(payload).data

    def context_data():
        return s.context_payload(prepared, service.strategy)

    def store_data():
        stored = {"id": result.hits[0].memory.pk, "stored": True, "deduplicated": False}
        return s.StoreResultSerializer({**stored, "embedding_status": "ready"}).data

    rows = []
    for label, fn, calls in (
        (f"search response ({len(result.hits)} hits): serializer", search_data, 300),
        ("context response: serializer", context_data, 1000),
        ("store response: serializer", store_data, 3000),
    ):
        assert with_before(fn)() == fn(), label
        rows.append(ab(label, with_before(fn), fn, calls, rounds))

    company_id = key.agent.company_id

    def webhook_before():
        return ApprovalWebhook.objects.filter(
            company_id=company_id, enabled=True, events__contains=["memory.created"]
        ).first()

    def webhook_after():
        return webhook_for_event(company_id=company_id, event="memory.created")

    rows.append(
        ab("store: webhook_for_event (no webhook)", webhook_before, webhook_after, 1000, rounds)
    )
    entry = {"target_type": "memory", "target_id": "x", "details": {"ids": ["a"]}}

    def audit_before():
        with transaction.atomic():
            AuditEntry.objects.create(
                company=key.agent.company,
                actor_agent=key.agent,
                action_type="memory.stored",
                created_at=timezone.now(),
                **entry,
            )

    def audit_after():
        with transaction.atomic():
            audit_record(
                company=key.agent.company,
                actor_agent=key.agent,
                action_type="memory.stored",
                **entry,
            )

    rows.append(ab("store: audit entry (in a transaction)", audit_before, audit_after, 500, rounds))
    return rows


if __name__ == "__main__":
    main()
