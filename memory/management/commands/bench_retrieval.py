"""``manage.py bench_retrieval``: recall and latency of the search pipeline on LoCoMo data,
or (with ``--scale``) search latency and filtered recall at 10k/100k/1M memories."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from bench.locomo import DEFAULT_KS, log, run_locomo


class Command(BaseCommand):
    help = "Benchmark memory retrieval (LoCoMo recall, or --scale latency/recall)."

    def add_arguments(self, parser):
        parser.add_argument("--data", help="LoCoMo-format JSON file (read in place)")
        parser.add_argument("--conversations", default="", help="comma-separated sample ids")
        parser.add_argument("--mode", choices=["hybrid", "dense", "sparse"], default="hybrid")
        parser.add_argument("--k", default=",".join(str(k) for k in DEFAULT_KS))
        parser.add_argument("--out", required=True, help="JSON file to write")
        parser.add_argument(
            "--no-context",
            action="store_true",
            help="store turns without the previous turn as their context",
        )
        parser.add_argument("--rrf-k", type=int, default=None)
        parser.add_argument(
            "--fusion",
            choices=["rrf", "linear"],
            default=None,
            help="default: the product default (rrf); linear uses the seeds' linear defaults",
        )
        parser.add_argument("--min-relevance", type=float, default=None)
        parser.add_argument("--leg-depth", type=int, default=None)
        parser.add_argument("--keep", action="store_true", help="keep the bench companies")
        parser.add_argument(
            "--scale",
            default="",
            help="comma-separated company sizes (e.g. 10000,100000): run the scale benchmark",
        )
        parser.add_argument("--agents", default="", help="--scale: agents per size, comma-sep")
        parser.add_argument("--queries", type=int, default=200, help="--scale: queries per size")
        parser.add_argument(
            "--levers",
            action="store_true",
            help="compare context on/off, dense/sparse/RRF k and depth on the same legs",
        )
        parser.add_argument("--legs-file", default=None, help="--levers: dump to / reuse from")

    def handle(self, *args, **options):
        out = Path(options["out"])
        if options["scale"]:
            from bench.scale_search import run_scale

            sizes = [int(s) for s in options["scale"].split(",") if s]
            agents = [int(a) for a in options["agents"].split(",") if a] or None
            result = run_scale(sizes=sizes, agents=agents, queries=options["queries"])
        elif options["levers"]:
            from bench.locomo_levers import run_levers

            if not options["data"]:
                raise CommandError("--data is required")
            result = run_levers(data=options["data"], legs_file=options["legs_file"])
        else:
            if not options["data"]:
                raise CommandError("--data is required (or --scale)")
            # The product's default retrieval config unless told otherwise, so the figures
            # are what a company created without a config gets.
            retrieval: dict = {}
            if options["fusion"] == "linear":
                retrieval = {"fusion_strategy": "linear"}
            if options["rrf_k"] is not None:
                retrieval["rrf_k"] = options["rrf_k"]
            if options["min_relevance"] is not None:
                retrieval["min_relevance"] = options["min_relevance"]
            ks = tuple(sorted({int(k) for k in options["k"].split(",") if k}))
            if not ks or min(ks) < 1 or max(ks) > 1000:
                raise CommandError("--k takes values between 1 and 1000")
            ids = {c.strip() for c in options["conversations"].split(",") if c.strip()} or None
            try:
                result = run_locomo(
                    data=options["data"],
                    conversation_ids=ids,
                    mode=options["mode"],
                    ks=ks,
                    with_context=not options["no_context"],
                    retrieval=retrieval,
                    leg_depth=options["leg_depth"],
                    keep=options["keep"],
                )
            except (OSError, ValueError) as exc:
                raise CommandError(str(exc)) from exc
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        log(f"wrote {out}")
        self.stdout.write(json.dumps(result, indent=2))
