"""The query-side adapter (pure): training separates positives from negatives, is
deterministic, resumes exactly, and is bounded."""

from __future__ import annotations

import numpy as np
import pytest

from memory.finetune.query_adapter import (
    TrainingParams,
    TrainingState,
    apply_adapter,
    evaluate,
    matrix_from_bytes,
    matrix_to_bytes,
    mine_hard_negatives,
    normalize_rows,
    split_held_out,
    train,
)

DIMS = 32


def _fixture(pairs: int = 240, groups: int = 4, seed: int = 3):
    """Documents are random unit vectors; each query is its document seen through a fixed
    distortion (a mix with another direction), so the base model ranks poorly and a linear
    map can undo it."""
    rng = np.random.default_rng(seed)
    docs = normalize_rows(rng.normal(size=(pairs, DIMS)).astype(np.float32))
    distortion = rng.normal(size=(DIMS, DIMS)).astype(np.float32)
    queries = normalize_rows(
        0.35 * docs + docs @ distortion.T * 0.25 + 0.05 * rng.normal(size=(pairs, DIMS))
    )
    positives = np.arange(pairs)
    doc_groups = np.arange(pairs) % groups
    return queries.astype(np.float32), positives, docs, doc_groups, doc_groups.copy()


def _similarity_gap(matrix, queries, positives, negatives, docs):
    z = normalize_rows(queries @ matrix.T)
    pos = np.sum(z * docs[positives], axis=1)
    neg = np.array([np.mean(docs[n[n >= 0]] @ zi) for zi, n in zip(z, negatives, strict=True)])
    return float(np.mean(pos - neg))


def test_training_separates_positives_from_negatives_on_held_out_pairs():
    queries, positives, docs, doc_groups, query_groups = _fixture()
    negatives = mine_hard_negatives(queries, positives, docs, doc_groups, query_groups, 5)
    train_rows, held = split_held_out(len(queries), 0.25, seed=1)
    params = TrainingParams(epochs=30, batch_size=16, learning_rate=1e-2, temperature=0.1)
    outcome = train(
        queries=queries[train_rows], positives=positives[train_rows],
        negatives=negatives[train_rows], docs=docs, params=params,
    )  # fmt: skip
    matrix = outcome.state.matrix
    identity = np.eye(DIMS, dtype=np.float32)
    before = _similarity_gap(identity, queries[held], positives[held], negatives[held], docs)
    after = _similarity_gap(matrix, queries[held], positives[held], negatives[held], docs)
    assert after > before + 0.1
    kwargs = dict(
        queries=queries[held], positives=positives[held], docs=docs, doc_groups=doc_groups,
        query_groups=query_groups[held], k=10,
    )  # fmt: skip
    base, tuned = evaluate(**kwargs), evaluate(**kwargs, matrix=matrix)
    assert tuned.ndcg_at_k > base.ndcg_at_k + 0.05
    assert tuned.recall_at_k >= base.recall_at_k
    assert outcome.stopped_by == "epochs"
    assert outcome.state.epochs_done == 30
    assert outcome.state.losses[-1] < outcome.state.losses[0]


def test_training_is_deterministic_and_resumes_exactly():
    queries, positives, docs, doc_groups, query_groups = _fixture(pairs=64)
    negatives = mine_hard_negatives(queries, positives, docs, doc_groups, query_groups, 3)
    params = TrainingParams(epochs=4, batch_size=8, seed=11)
    kwargs = dict(queries=queries, positives=positives, negatives=negatives, docs=docs)
    one = train(**kwargs, params=params).state.matrix
    two = train(**kwargs, params=params).state.matrix
    np.testing.assert_array_equal(one, two)

    saved = []
    halfway = TrainingParams(epochs=2, batch_size=8, seed=11)
    train(**kwargs, params=halfway, on_epoch=lambda s: saved.append(s.to_bytes()))
    assert len(saved) == 2
    resumed = train(**kwargs, params=params, state=TrainingState.from_bytes(saved[-1]))
    np.testing.assert_array_equal(resumed.state.matrix, one)
    other_seed = train(**kwargs, params=TrainingParams(epochs=4, batch_size=8, seed=12))
    assert not np.array_equal(other_seed.state.matrix, one)


def test_time_budget_stops_between_batches():
    queries, positives, docs, doc_groups, query_groups = _fixture(pairs=64)
    negatives = mine_hard_negatives(queries, positives, docs, doc_groups, query_groups, 3)
    ticks = iter(range(1000))
    outcome = train(
        queries=queries, positives=positives, negatives=negatives, docs=docs,
        params=TrainingParams(epochs=50, batch_size=8, max_seconds=5),
        clock=lambda: float(next(ticks)),
    )  # fmt: skip
    assert outcome.stopped_by == "time"
    assert outcome.state.step == 4  # clock 0 at start; batches at 1..4; 5 stops
    assert outcome.state.epochs_done == 0


def test_hard_negatives_stay_in_scope_and_skip_the_positive():
    queries, positives, docs, doc_groups, query_groups = _fixture(pairs=40, groups=4)
    negatives = mine_hard_negatives(queries, positives, docs, doc_groups, query_groups, 50)
    for row, negs in enumerate(negatives):
        chosen = negs[negs >= 0]
        assert positives[row] not in chosen
        assert set(doc_groups[chosen]) <= {query_groups[row]}
        assert len(chosen) <= 9  # 10 documents per scope, minus the positive
        assert (negs[len(chosen) :] == -1).all()


def test_evaluation_on_hand_computed_ranks():
    docs = np.eye(3, dtype=np.float32)
    queries = np.array([[1, 0, 0], [0.5, 0.9, 0]], dtype=np.float32)
    result = evaluate(
        queries=queries, positives=np.array([0, 0]), docs=docs,
        doc_groups=np.zeros(3, dtype=int), query_groups=np.zeros(2, dtype=int), k=1,
    )  # fmt: skip
    # first: rank 1 (gain 1); second: rank 2 (outside k=1)
    assert (result.recall_at_k, result.ndcg_at_k) == (0.5, 0.5)


def test_apply_adapter_and_serialisation():
    matrix = np.diag([2.0, 1.0]).astype(np.float32)
    np.testing.assert_allclose(
        apply_adapter(matrix, np.array([1.0, 1.0])), [0.894427, 0.447214], rtol=1e-5
    )
    np.testing.assert_array_equal(matrix_from_bytes(matrix_to_bytes(matrix)), matrix)
    with pytest.raises(ValueError):
        TrainingParams(epochs=0)


def test_evaluation_with_several_relevant_documents_on_hand_computed_ranks():
    from memory.finetune.query_adapter import evaluate_relevant

    docs = np.eye(4, dtype=np.float32)
    queries = np.array([[0.9, 0.5, 0.1, 0], [0, 0, 0.2, 1]], dtype=np.float32)
    result = evaluate_relevant(
        queries=queries, relevant=[np.array([1, 2]), np.array([0])], docs=docs,
        doc_groups=np.zeros(4, dtype=int), query_groups=np.zeros(2, dtype=int), k=2,
    )  # fmt: skip
    # first: top 2 = [0, 1]; relevant 1 at rank 2 → (1/log2 3) / (1 + 1/log2 3); second: none
    expected = (1 / np.log2(3)) / (1 + 1 / np.log2(3)) / 2
    assert result.recall_at_k == 0.5
    assert result.ndcg_at_k == pytest.approx(expected)
