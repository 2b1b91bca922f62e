"""Wall time of the test suite (or a part of it) in one process and on pytest-xdist workers.

    .venv/bin/python bench/suite_speed.py                     # the whole suite, twice
    .venv/bin/python bench/suite_speed.py --paths tests/orgmemory tests/persistence

Runs ``pytest -q -p no:cacheprovider [-n WORKERS] PATHS`` alternately serial and with
``--workers`` workers, ``--rounds`` times (serial, xdist, serial, xdist, …), so both modes
see the same machine: on a shared machine the load of other work changes within minutes,
and interleaving is what makes the pairs comparable. Per run: the wall time, the 1-minute
load average before and after, pytest's exit code and its summary line. JSON in
``bench/results/suite_speed.json`` (progress on stderr). The runs use this checkout's
embedded server and create their own test databases like ``make test`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_average() -> float:
    return os.getloadavg()[0]


def run(paths: list[str], workers: int) -> dict:
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if workers:
        args += ["-n", str(workers)]
    args += paths
    before = load_average()
    started = time.monotonic()
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return {
        "workers": workers,
        "wall_s": round(wall, 1),
        "load_before": round(before, 2),
        "load_after": round(load_average(), 2),
        "exit_code": done.returncode,
        "summary": lines[-1] if lines else "",
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/suite_speed.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--paths", nargs="*", default=[], help="test paths (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "suite_speed.json"))
    args = parser.parse_args()
    if args.workers < 1 or args.rounds < 1:
        parser.error("--workers and --rounds must be at least 1")

    runs = []
    for round_no in range(1, args.rounds + 1):
        for workers in (0, args.workers):
            result = {"round": round_no, **run(args.paths, workers)}
            print(json.dumps(result), file=sys.stderr, flush=True)
            runs.append(result)
    serial = [r["wall_s"] for r in runs if r["workers"] == 0]
    parallel = [r["wall_s"] for r in runs if r["workers"] == args.workers]
    report = {
        "benchmark": "suite_speed",
        "paths": args.paths or ["tests"],
        "workers": args.workers,
        "rounds": args.rounds,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "serial_wall_s": serial,
        "xdist_wall_s": parallel,
        "speedup_per_round": [round(s / p, 2) for s, p in zip(serial, parallel, strict=True)],
        "all_passed": all(r["exit_code"] == 0 for r in runs),
        "runs": runs,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
