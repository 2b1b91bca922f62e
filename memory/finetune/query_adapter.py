"""A query-side linear adapter over a base embedder's vectors (pure: numpy only, no Django).

The approach published as "embedding adapters": the base model and every stored document
vector stay as they are; a square matrix ``W`` (``dims × dims``, initialised at the identity)
maps a query's base vector ``q`` to ``normalize(W q)`` before the dense leg compares it with
the documents. Activation and rollback therefore touch no stored vector.

Training is contrastive (InfoNCE). For query ``i`` with positive document ``p_i``, the
candidates are the positives of every pair in the batch (in-batch negatives, except those
that *are* ``p_i``) and ``p_i``'s mined hard negatives (documents of the same scope the base
model ranks high for ``q_i``); the loss is the cross-entropy of
``softmax(normalize(W q_i) · candidates / τ)`` against ``p_i``. The gradient goes through the
normalisation (``∂z/∂u = (I − z zᵀ) / ‖u‖``), and an L2 pull toward the identity
(``λ ‖W − I‖²``) keeps a small data set from bending the whole space. Adam updates ``W``.

Determinism: the pair order of every epoch comes from ``numpy.random.default_rng(seed)``;
the same inputs, seed and bounds give the same matrix. Bounds: ``epochs`` and, checked
between batches, a time budget (``max_seconds``; the clock is injectable); a run stopped by
the budget says so (``stopped_by="time"``).

Resumable: :class:`TrainingState` (matrix, Adam moments, step, finished epochs) is what a
caller persists after each epoch; :func:`train` continues from it.

Evaluation (:func:`evaluate`) ranks, for each held-out query, the documents of its scope
(``doc_groups == query_groups[i]``) by cosine similarity and reports recall@k (the positive
is in the top ``k``) and nDCG@k (one relevant document: ``1 / log2(rank + 1)``).
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

#: The pull toward the identity (per element, per step).
IDENTITY_PULL = 1e-3
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
#: A mined hard negative the base model scores at this share of the positive's score or
#: above is likely another correct answer (a near-duplicate memory), not a negative.
FALSE_NEGATIVE_SHARE = 0.98


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def apply_adapter(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``normalize(W q)`` as float32 (what the dense leg compares with stored vectors)."""
    out = matrix @ np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(out))
    return (out / max(norm, 1e-12)).astype(np.float32)


@dataclass(frozen=True)
class TrainingParams:
    epochs: int = 10
    batch_size: int = 32
    learning_rate: float = 1e-3
    temperature: float = 0.05
    seed: int = 0
    max_seconds: float = 600.0

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 2:
            raise ValueError("epochs must be >= 1 and batch_size >= 2")
        if self.learning_rate <= 0 or self.temperature <= 0 or self.max_seconds <= 0:
            raise ValueError("learning_rate, temperature and max_seconds must be > 0")


@dataclass
class TrainingState:
    matrix: np.ndarray
    first_moment: np.ndarray
    second_moment: np.ndarray
    step: int = 0
    epochs_done: int = 0
    losses: list[float] = field(default_factory=list)

    @classmethod
    def initial(cls, dims: int) -> TrainingState:
        return cls(
            matrix=np.eye(dims, dtype=np.float32),
            first_moment=np.zeros((dims, dims), dtype=np.float32),
            second_moment=np.zeros((dims, dims), dtype=np.float32),
        )

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez(
            buffer,
            matrix=self.matrix,
            first_moment=self.first_moment,
            second_moment=self.second_moment,
            counters=np.array([self.step, self.epochs_done], dtype=np.int64),
            losses=np.array(self.losses, dtype=np.float64),
        )
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> TrainingState:
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            step, epochs_done = (int(n) for n in arrays["counters"])
            return cls(
                matrix=arrays["matrix"].astype(np.float32),
                first_moment=arrays["first_moment"].astype(np.float32),
                second_moment=arrays["second_moment"].astype(np.float32),
                step=step,
                epochs_done=epochs_done,
                losses=[float(x) for x in arrays["losses"]],
            )


@dataclass(frozen=True)
class TrainingOutcome:
    state: TrainingState
    stopped_by: str  # "epochs" | "time"
    seconds: float


def mine_hard_negatives(
    queries: np.ndarray,
    positives: np.ndarray,
    docs: np.ndarray,
    doc_groups: np.ndarray,
    query_groups: np.ndarray,
    count: int,
) -> np.ndarray:
    """For each query, the ``count`` documents of its scope the base model ranks highest,
    except its positive and likely false negatives (``FALSE_NEGATIVE_SHARE``); ``-1`` pads
    a scope with too few documents. ``positives[i]`` is an index into ``docs``."""
    out = np.full((len(queries), count), -1, dtype=np.int64)
    if count == 0:
        return out
    for group in np.unique(query_groups):
        rows = np.flatnonzero(query_groups == group)
        members = np.flatnonzero(doc_groups == group)
        if len(members) == 0:
            continue
        scores = queries[rows] @ docs[members].T
        for row_pos, row in enumerate(rows):
            row_scores = scores[row_pos]
            positive_score = float(queries[row] @ docs[positives[row]])
            order = np.argsort(-row_scores, kind="stable")
            chosen = []
            for candidate in order:
                doc = members[candidate]
                if doc == positives[row]:
                    continue
                if row_scores[candidate] >= FALSE_NEGATIVE_SHARE * positive_score > 0:
                    continue
                chosen.append(doc)
                if len(chosen) == count:
                    break
            out[row, : len(chosen)] = chosen
    return out


def _batch_gradient(
    matrix: np.ndarray,
    queries: np.ndarray,
    positives: np.ndarray,
    negatives: np.ndarray,
    docs: np.ndarray,
    temperature: float,
) -> tuple[float, np.ndarray]:
    """Mean InfoNCE loss of one batch and its gradient with respect to ``matrix``."""
    batch = len(queries)
    projected = queries @ matrix.T  # u = W q
    norms = np.maximum(np.linalg.norm(projected, axis=1, keepdims=True), 1e-12)
    z = projected / norms
    in_batch = docs[positives]  # B × d
    hard = docs[np.maximum(negatives, 0)]  # B × K × d
    logits_in = (z @ in_batch.T) / temperature
    logits_hard = np.einsum("bd,bkd->bk", z, hard) / temperature
    # Another pair's positive that is this query's positive too is not a negative; nor is
    # padding (-1).
    same = positives[:, None] == positives[None, :]
    np.fill_diagonal(same, False)
    logits_in = np.where(same, -np.inf, logits_in)
    logits_hard = np.where(negatives < 0, -np.inf, logits_hard)
    logits = np.concatenate([logits_in, logits_hard], axis=1)
    peak = logits.max(axis=1, keepdims=True)
    weights = np.exp(logits - peak)
    probs = weights / weights.sum(axis=1, keepdims=True)
    target = np.arange(batch)
    loss = float(-np.mean(np.log(np.maximum(probs[target, target], 1e-30))))
    dlogits = probs.copy()
    dlogits[target, target] -= 1.0
    dlogits /= batch * temperature
    grad_z = dlogits[:, :batch] @ in_batch + np.einsum("bk,bkd->bd", dlogits[:, batch:], hard)
    grad_u = (grad_z - z * np.sum(grad_z * z, axis=1, keepdims=True)) / norms
    return loss, (grad_u.T @ queries).astype(np.float32)


def train(
    *,
    queries: np.ndarray,
    positives: np.ndarray,
    negatives: np.ndarray,
    docs: np.ndarray,
    params: TrainingParams,
    state: TrainingState | None = None,
    on_epoch: Callable[[TrainingState], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> TrainingOutcome:
    """Train (or continue training) the adapter on ``queries[i]`` → ``docs[positives[i]]``
    with hard negatives ``negatives[i]`` (indices into ``docs``, ``-1`` = none).

    Vectors are expected L2-normalised. ``on_epoch`` is called after every finished epoch
    with the state to persist (the resume point)."""
    queries = np.asarray(queries, dtype=np.float32)
    docs = np.asarray(docs, dtype=np.float32)
    dims = queries.shape[1]
    state = state or TrainingState.initial(dims)
    if state.matrix.shape != (dims, dims):
        raise ValueError(f"the state's matrix is {state.matrix.shape}, the vectors {dims} wide")
    identity = np.eye(dims, dtype=np.float32)
    beta1, beta2 = ADAM_BETAS
    started = clock()
    stopped_by = "epochs"
    while state.epochs_done < params.epochs:
        # One generator per epoch, seeded by (seed, epoch): a resumed run shuffles exactly
        # as an uninterrupted one would.
        order = np.random.default_rng([params.seed, state.epochs_done]).permutation(len(queries))
        epoch_losses = []
        for start in range(0, len(order), params.batch_size):
            if clock() - started >= params.max_seconds:
                stopped_by = "time"
                break
            rows = order[start : start + params.batch_size]
            if len(rows) < 2:
                continue
            loss, grad = _batch_gradient(
                state.matrix, queries[rows], positives[rows], negatives[rows], docs,
                params.temperature,
            )  # fmt: skip
            grad += IDENTITY_PULL * (state.matrix - identity)
            state.step += 1
            state.first_moment = beta1 * state.first_moment + (1 - beta1) * grad
            state.second_moment = beta2 * state.second_moment + (1 - beta2) * grad * grad
            corrected_first = state.first_moment / (1 - beta1**state.step)
            corrected_second = state.second_moment / (1 - beta2**state.step)
            state.matrix = (
                state.matrix
                - params.learning_rate * corrected_first / (np.sqrt(corrected_second) + ADAM_EPS)
            ).astype(np.float32)
            epoch_losses.append(loss)
        if stopped_by == "time":
            break
        state.epochs_done += 1
        state.losses.append(float(np.mean(epoch_losses)) if epoch_losses else 0.0)
        if on_epoch is not None:
            on_epoch(state)
    return TrainingOutcome(state=state, stopped_by=stopped_by, seconds=clock() - started)


@dataclass(frozen=True)
class Evaluation:
    recall_at_k: float
    ndcg_at_k: float
    queries: int
    k: int

    def as_dict(self) -> dict:
        return {
            f"recall@{self.k}": round(self.recall_at_k, 4),
            f"ndcg@{self.k}": round(self.ndcg_at_k, 4),
            "queries": self.queries,
        }


def evaluate(
    *,
    queries: np.ndarray,
    positives: np.ndarray,
    docs: np.ndarray,
    doc_groups: np.ndarray,
    query_groups: np.ndarray,
    matrix: np.ndarray | None = None,
    k: int = 10,
) -> Evaluation:
    """recall@k and nDCG@k of ranking each query's scope by cosine similarity to
    ``normalize(W q)`` (the base query vector when ``matrix`` is None)."""
    queries = np.asarray(queries, dtype=np.float32)
    if matrix is not None:
        queries = normalize_rows(queries @ matrix.T)
    if len(queries) == 0:
        return Evaluation(recall_at_k=0.0, ndcg_at_k=0.0, queries=0, k=k)
    hits = 0
    gain = 0.0
    for row, query in enumerate(queries):
        members = np.flatnonzero(doc_groups == query_groups[row])
        scores = docs[members] @ query
        positive_score = float(docs[positives[row]] @ query)
        # Rank of the positive among its scope (ties count against it).
        rank = int(np.sum(scores > positive_score)) + 1
        if rank <= k:
            hits += 1
            gain += 1.0 / float(np.log2(rank + 1))
    return Evaluation(
        recall_at_k=hits / len(queries), ndcg_at_k=gain / len(queries), queries=len(queries), k=k
    )


def evaluate_relevant(
    *,
    queries: np.ndarray,
    relevant: list[np.ndarray],
    docs: np.ndarray,
    doc_groups: np.ndarray,
    query_groups: np.ndarray,
    matrix: np.ndarray | None = None,
    k: int = 10,
) -> Evaluation:
    """Like :func:`evaluate` with several relevant documents per query (``relevant[i]``:
    indices into ``docs``): recall@k = at least one in the top ``k``; nDCG@k = DCG of the
    relevant documents in the top ``k`` over the ideal DCG."""
    queries = np.asarray(queries, dtype=np.float32)
    if matrix is not None and len(queries):
        queries = normalize_rows(queries @ matrix.T)
    if len(queries) == 0:
        return Evaluation(recall_at_k=0.0, ndcg_at_k=0.0, queries=0, k=k)
    hits = 0
    total = 0.0
    for row, query in enumerate(queries):
        members = np.flatnonzero(doc_groups == query_groups[row])
        scores = docs[members] @ query
        top = members[np.argsort(-scores, kind="stable")[:k]]
        wanted = set(int(i) for i in relevant[row])
        gains = [1.0 / float(np.log2(rank + 2)) for rank, doc in enumerate(top) if doc in wanted]
        ideal = sum(1.0 / float(np.log2(rank + 2)) for rank in range(min(k, len(wanted))))
        hits += bool(gains)
        total += sum(gains) / ideal if ideal else 0.0
    return Evaluation(
        recall_at_k=hits / len(queries), ndcg_at_k=total / len(queries), queries=len(queries), k=k
    )


def split_held_out(count: int, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic (train, held-out) index split; at least one pair on each side when
    ``count >= 2``."""
    order = np.random.default_rng([seed, 7919]).permutation(count)
    held = min(max(1, round(count * share)), count - 1) if count >= 2 else 0
    return np.sort(order[held:]), np.sort(order[:held])


def matrix_to_bytes(matrix: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(matrix, dtype=np.float32), allow_pickle=False)
    return buffer.getvalue()


def matrix_from_bytes(data: bytes) -> np.ndarray:
    return np.load(io.BytesIO(data), allow_pickle=False).astype(np.float32)
