"""Reads for the query-adapter fine-tune: mining training pairs from a company's own rows,
and the active adapter's matrix for search.

**Pairs, without an LLM.** Each pair is a query text and one of the company's live memories
(its stored base vector is the positive; documents are never re-embedded):

* ``turn``: a memory stored verbatim from a conversation carries the message it answers as
  its ``context``; that message is the query, the turn the answer;
* sources other capabilities register (:func:`memory.core.extensions.
  register_training_pair_source`;
  procedural learning: a lesson's activation condition → the lesson);
* ``org_fact``: an org fact's earlier wording → its current version. Org facts are embedded
  with the company's embedder into their own table (``FactVersionEmbedding``), so the
  document pool is extended with each live fact's current-version vector of the base
  embedder, all in one group (:data:`ORG_FACT_GROUP`, the company's facts): such a pair's
  hard negatives are the company's other facts and it is evaluated among them, as the
  org-fact search ranks it. (``memory`` may import ``orgmemory``; no extension point needed.)
* ``labelled``: ``memory.fine_tune.training_data_dir``'s ``*.jsonl`` files, one
  ``{"query": ..., "memory_id": ...}`` per line (a memory not the company's, or without a
  vector of the base embedder, is skipped and counted).

Query texts are redacted (``memory.redaction``) before they are embedded, as everywhere text
leaves an agent's control. The document pool is every live memory with a vector of the base
embedder of the agents the pairs touch (plus the live org facts' vectors when a fact pair is
chosen); a memory's scope (its group) is its agent, so hard negatives come from the same
agent's memories and evaluation ranks within that agent's.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from uuid import UUID

import numpy as np
from django.utils import timezone

from memory.core.extensions import QueryAdapterUnavailable, training_pair_sources
from memory.core.models import Memory
from memory.finetune.config import EmbeddingFineTuneConfig
from memory.finetune.models import AdapterCheckpoint, FineTuneRun
from memory.finetune.query_adapter import apply_adapter, matrix_from_bytes, normalize_rows
from orgmemory.selectors.facts import fact_version_pairs, fact_version_vectors
from persistence.models import Company
from persistence.selectors.config import company_config
from persistence.selectors.embedder import company_embedder
from synthorg.company_config import CompanyConfig
from synthorg.redaction import redactor_for
from synthorg.tenancy import TenantPathError, tenant_path

logger = logging.getLogger(__name__)

LABELLED_LINE_MAX_CHARS = 20_000
#: The group of the org-fact documents (agents' groups are their ids, all positive).
ORG_FACT_GROUP = -1
ORG_FACT_SOURCE = "org_fact"
SYNTHETIC_SOURCE = "synthetic"


@dataclass
class PairSet:
    """Mined pairs: ``queries[i]`` (text) → ``docs[positives[i]]``; ``groups`` per document."""

    queries: list[str]
    positives: np.ndarray
    doc_ids: list[UUID]
    docs: np.ndarray
    doc_groups: np.ndarray
    counts: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    redactions: dict[str, int] = field(default_factory=dict)

    @property
    def query_groups(self) -> np.ndarray:
        return self.doc_groups[self.positives]


def _live_vectors(company: Company, embedder_id: str, now: datetime | None = None):
    """The company's live memories (:meth:`MemoryQuerySet.live`) at ``now`` with a vector
    of ``embedder_id``: an expired or superseded memory is no positive and not in the pool."""
    return Memory.objects.live(now or timezone.now()).filter(
        company=company, embedder_id=embedder_id, embedding__isnull=False
    )


def turn_pairs(company: Company, embedder_id: str) -> Iterable[tuple[str, UUID]]:
    rows = _live_vectors(company, embedder_id).exclude(context="").order_by("created_at", "id")
    for memory_id, context in rows.values_list("id", "context").iterator():
        if context.strip():
            yield context, memory_id


def labelled_pairs(
    company: Company, config: EmbeddingFineTuneConfig, skipped: dict[str, int]
) -> Iterable[tuple[str, UUID]]:
    if config.training_data_dir is None:
        return
    directory = tenant_path(company.pk, config.training_data_dir)
    if not directory.is_dir():
        return
    for path in sorted(directory.glob("*.jsonl")):
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                try:
                    row = json.loads(line[:LABELLED_LINE_MAX_CHARS])
                    query, memory_id = str(row["query"]), UUID(str(row["memory_id"]))
                except (ValueError, KeyError, TypeError):
                    skipped["labelled_unreadable"] = skipped.get("labelled_unreadable", 0) + 1
                    continue
                if query.strip():
                    yield query, memory_id


@dataclass
class DevQuestions:
    """The company's own dev questions (``evaluation_file``): redacted query texts and, per
    query, the indices of its relevant memories in the pair set's document pool."""

    queries: list[str]
    relevant: list[np.ndarray]
    skipped: int = 0


def _dev_line(line: str) -> tuple[str, list[UUID]]:
    """One dev question: ``{"query": "<text>", "memory_ids": ["<uuid>", ...]}`` with a
    non-blank query and at least one memory (raises ``ValueError`` otherwise)."""
    try:
        row = json.loads(line[:LABELLED_LINE_MAX_CHARS])
        query, ids = row["query"], row["memory_ids"]
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query")
        if not isinstance(ids, list) or not ids:
            raise ValueError("memory_ids")
        return query, [UUID(str(memory_id)) for memory_id in ids]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(str(exc)) from None


EVALUATION_FILE_SHAPE = '{"query": "<text>", "memory_ids": ["<memory uuid>", ...]}'


@dataclass(frozen=True)
class EvaluationFileProblem:
    code: str
    detail: str

    def as_dict(self) -> dict:
        return {"code": self.code, "detail": self.detail}


def _dev_lines(company: Company, config: EmbeddingFineTuneConfig):
    """The evaluation file's questions, ``(query, memory ids)`` each, or the
    :class:`EvaluationFileProblem` that makes it unusable (missing, unreadable, a line not
    of the expected shape)."""
    name = config.evaluation_file
    try:
        path = tenant_path(company.pk, name)
        text = path.read_text(encoding="utf-8")
    except TenantPathError as exc:
        return EvaluationFileProblem("evaluation_file_unreadable", EVALUATION_UNREADABLE.format(
            name=name, reason=str(exc)))  # fmt: skip
    except FileNotFoundError:
        return EvaluationFileProblem(
            "evaluation_file_missing", EVALUATION_MISSING.format(name=name)
        )
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return EvaluationFileProblem("evaluation_file_unreadable", EVALUATION_UNREADABLE.format(
            name=name, reason=reason))  # fmt: skip
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            lines.append(_dev_line(line))
        except ValueError:
            return EvaluationFileProblem("evaluation_file_invalid", EVALUATION_INVALID.format(
                name=name, line=number, shape=EVALUATION_FILE_SHAPE))  # fmt: skip
    return lines


EVALUATION_MISSING = (
    "memory.fine_tune.evaluation_file {name!r} does not exist in the company's server directory."
)
EVALUATION_UNREADABLE = "memory.fine_tune.evaluation_file {name!r} cannot be read: {reason}."
EVALUATION_INVALID = (
    "memory.fine_tune.evaluation_file {name!r}, line {line}: not a JSON object {shape} "
    "(one dev question per line)."
)
EVALUATION_NO_QUESTIONS = (
    "memory.fine_tune.evaluation_file {name!r} has no question whose memories are the "
    "company's live memories with a {embedder_id} vector: the dev-question gate would judge "
    "0 questions."
)


def evaluation_file_problem(
    company: Company, config: EmbeddingFineTuneConfig, embedder_id: str
) -> EvaluationFileProblem | None:
    """What makes the configured ``evaluation_file`` unusable for the gate, or ``None`` (none
    configured, or at least one question names a live memory of the company with a vector
    of ``embedder_id``). Preflight refuses a run on it, and a run checks it again first."""
    if config.evaluation_file is None:
        return None
    found = _dev_lines(company, config)
    if isinstance(found, EvaluationFileProblem):
        return found
    wanted = {memory_id for _, ids in found for memory_id in ids}
    usable = set(
        _live_vectors(company, embedder_id).filter(id__in=wanted).values_list("id", flat=True)
    )
    if not any(usable.intersection(ids) for _, ids in found):
        return EvaluationFileProblem("evaluation_file_no_questions", EVALUATION_NO_QUESTIONS.format(
            name=config.evaluation_file, embedder_id=embedder_id))  # fmt: skip
    return None


def dev_questions(
    company: Company, config: EmbeddingFineTuneConfig, doc_ids: list[UUID]
) -> DevQuestions | None:
    """``None`` when no ``evaluation_file`` is configured. A question whose memories are not
    in the pool (another company's, no base vector, an agent without pairs) is skipped; an
    unusable file (:func:`evaluation_file_problem`) gives no question."""
    if config.evaluation_file is None:
        return None
    index = {memory_id: i for i, memory_id in enumerate(doc_ids)}
    redactor = redactor_for(company_config(company).memory.redaction)
    found = DevQuestions(queries=[], relevant=[])
    lines = _dev_lines(company, config)
    if isinstance(lines, EvaluationFileProblem):
        return found
    for query, ids in lines:
        wanted = [index[m] for m in ids if m in index]
        if not wanted:
            found.skipped += 1
            continue
        found.queries.append(redactor.redact_value(query))
        found.relevant.append(np.array(wanted, dtype=np.int64))
    return found


def pair_counts(company: Company, embedder_id: str) -> dict[str, int]:
    """How many pairs each source would give (no embedding, no file parsing beyond counting)."""
    counts = {"turn": sum(1 for _ in turn_pairs(company, embedder_id))}
    for name, source in training_pair_sources().items():
        counts[name] = sum(1 for _ in source(company, embedder_id))
    counts[ORG_FACT_SOURCE] = sum(1 for _ in fact_version_pairs(company, embedder_id))
    config = company_config(company).memory.fine_tune
    counts["labelled"] = sum(1 for _ in labelled_pairs(company, config, {}))
    return counts


def mine_pairs(
    company: Company,
    embedder_id: str,
    config: EmbeddingFineTuneConfig,
    *,
    max_pairs: int,
    synthetic: list[tuple[str, UUID]] | tuple = (),
) -> PairSet:
    """The company's pairs (at most ``max_pairs``, taken evenly over the sources in a
    deterministic order) and the document pool of the agents they touch. ``synthetic``: the
    run's LLM-generated ``(question, memory id)`` pairs (source ``synthetic``). Query texts
    are returned redacted; they are embedded by the caller."""
    skipped: dict[str, int] = {}
    sources: dict[str, Iterable[tuple[str, UUID]]] = {"turn": turn_pairs(company, embedder_id)}
    for name, source in training_pair_sources().items():
        sources[name] = source(company, embedder_id)
    sources[ORG_FACT_SOURCE] = fact_version_pairs(company, embedder_id)
    sources["labelled"] = labelled_pairs(company, config, skipped)
    sources[SYNTHETIC_SOURCE] = synthetic
    raw: dict[str, list[tuple[str, UUID]]] = {name: list(rows) for name, rows in sources.items()}

    # Which memories are usable positives: the company's live rows with a base vector (live
    # at one instant: each positive is in the pool below).
    now = timezone.now()
    wanted = {
        memory_id for name, rows in raw.items() if name != ORG_FACT_SOURCE for _, memory_id in rows
    }
    agent_of = dict(
        _live_vectors(company, embedder_id, now).filter(id__in=wanted).values_list("id", "agent_id")
    )
    facts: dict[UUID, list[float]] = (
        dict(fact_version_vectors(company, embedder_id)) if raw[ORG_FACT_SOURCE] else {}
    )
    chosen: list[tuple[str, UUID, str]] = []
    for name, rows in raw.items():
        known = facts if name == ORG_FACT_SOURCE else agent_of
        usable = [(q, m) for q, m in rows if m in known]
        if len(usable) < len(rows):
            skipped[f"{name}_no_vector"] = len(rows) - len(usable)
        chosen += [(q, m, name) for q, m in usable]
    if len(chosen) > max_pairs:
        keep = np.random.default_rng([config.seed, 104729]).choice(
            len(chosen), max_pairs, replace=False
        )
        chosen = [chosen[i] for i in sorted(keep)]

    agents = sorted({agent_of[m] for _, m, name in chosen if name != ORG_FACT_SOURCE})
    doc_ids: list[UUID] = []
    vectors: list[np.ndarray] = []
    groups: list[int] = []
    pool = (
        _live_vectors(company, embedder_id, now)
        .filter(agent_id__in=agents)
        .order_by("agent_id", "id")
        .values_list("id", "agent_id", "embedding")
    )
    for memory_id, agent_id, embedding in pool.iterator(chunk_size=2000):
        doc_ids.append(memory_id)
        vectors.append(np.asarray(embedding, dtype=np.float32))
        groups.append(agent_id)
    if any(name == ORG_FACT_SOURCE for _, _, name in chosen):
        for operation_id, embedding in facts.items():
            doc_ids.append(operation_id)
            vectors.append(np.asarray(embedding, dtype=np.float32))
            groups.append(ORG_FACT_GROUP)
    index = {memory_id: i for i, memory_id in enumerate(doc_ids)}
    redactor = redactor_for(company_config(company).memory.redaction)
    redactions: dict[str, int] = {}
    queries = [redactor.redact_value(q, redactions) for q, _, _ in chosen]
    counts: dict[str, int] = dict.fromkeys(raw, 0)
    for _, _, name in chosen:
        counts[name] += 1
    docs = np.vstack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
    return PairSet(
        queries=queries,
        positives=np.array([index[m] for _, m, _ in chosen], dtype=np.int64),
        doc_ids=doc_ids,
        docs=normalize_rows(docs) if len(vectors) else docs,
        doc_groups=np.array(groups, dtype=np.int64),
        counts=counts,
        skipped=skipped,
        redactions=redactions,
    )


# --- the active adapter, for search -----------------------------------------------------------

#: checkpoint id → matrix. A checkpoint's matrix never changes once written, so the cache
#: needs no invalidation; a deleted checkpoint is simply never asked for again.
_matrices: dict[UUID, np.ndarray] = {}
_matrices_lock = threading.Lock()
MATRIX_CACHE_MAX = 64


class AdapterUnavailableError(QueryAdapterUnavailable):
    """The active checkpoint's file is missing or does not match its recorded digest."""


def checkpoint_file(company_id: int, checkpoint: AdapterCheckpoint) -> Path:
    return tenant_path(company_id, checkpoint.directory) / checkpoint.file_name


def adapter_matrix(checkpoint_id: UUID) -> np.ndarray:
    """The checkpoint's matrix (cached per process). Raises :class:`AdapterUnavailableError`
    when its file is gone or altered (the digest is checked on every load)."""
    matrix = _matrices.get(checkpoint_id)
    if matrix is not None:
        return matrix
    checkpoint = AdapterCheckpoint.objects.select_related("company").get(pk=checkpoint_id)
    path = checkpoint_file(checkpoint.company_id, checkpoint)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AdapterUnavailableError(f"adapter {checkpoint_id}: {exc.strerror}") from None
    if hashlib.sha256(data).hexdigest() != checkpoint.sha256:
        raise AdapterUnavailableError(f"adapter {checkpoint_id}: file does not match its digest")
    matrix = matrix_from_bytes(data)
    if matrix.shape != (checkpoint.dims, checkpoint.dims):
        raise AdapterUnavailableError(f"adapter {checkpoint_id}: matrix is {matrix.shape}")
    with _matrices_lock:
        if len(_matrices) >= MATRIX_CACHE_MAX:
            _matrices.pop(next(iter(_matrices)))
        _matrices[checkpoint_id] = matrix
    return matrix


def active_adapter_sql(company_id: int, embedder_id: str, dims: int) -> tuple[str, list]:
    """A scalar SQL expression: the company's active checkpoint id for this embedder and
    width (NULL if none), for the search's planning round trip."""
    return (
        "(SELECT a.id FROM memory_adaptercheckpoint a WHERE a.company_id = %s "
        "AND a.is_active AND a.embedder_id = %s AND a.dims = %s)",
        [company_id, embedder_id, dims],
    )


def plan_query_adapter(
    config: CompanyConfig, company_id: int, embedder_id: str, dims: int
) -> tuple[str, list] | None:
    """The memory search's choice (:class:`memory.core.extensions.QueryVectorAdapter`): the
    company's active checkpoint for the query's embedder and width, while
    ``memory.fine_tune.enabled``."""
    if not config.memory.fine_tune.enabled:
        return None
    return active_adapter_sql(company_id, embedder_id, dims)


def apply_query_adapter(checkpoint_id: UUID, vector: np.ndarray) -> np.ndarray:
    """The query vector through checkpoint ``checkpoint_id`` (raises
    :class:`AdapterUnavailableError` when its file is gone or altered)."""
    return apply_adapter(adapter_matrix(checkpoint_id), vector)


# --- listings ---------------------------------------------------------------------------------


def fine_tune_runs(company: Company):
    return (
        FineTuneRun.objects.filter(company=company)
        .defer("state", "synthetic_pairs")
        .order_by("-created_at", "id")
    )


def fine_tune_run_get(company: Company, run_id):
    return fine_tune_runs(company).select_related("checkpoint").filter(pk=run_id).first()


def adapter_checkpoints(company: Company):
    return AdapterCheckpoint.objects.filter(company=company).order_by("-created_at", "id")


def active_adapter(company: Company) -> AdapterCheckpoint | None:
    return AdapterCheckpoint.objects.filter(company=company, is_active=True).first()


@dataclass(frozen=True)
class ActiveEmbedder:
    """What the company's searches rank with: its embedder and the active adapter, if any
    (``applied``: fine-tuning is enabled and the adapter maps this embedder's vectors)."""

    embedder_id: str
    dims: int
    enabled: bool
    checkpoint: UUID | None
    applied: bool

    def as_dict(self) -> dict:
        return {
            "embedder_id": self.embedder_id,
            "dims": self.dims,
            "enabled": self.enabled,
            "checkpoint": self.checkpoint,
            "applied": self.applied,
        }


def active_embedder(company: Company) -> ActiveEmbedder:
    embedder = company_embedder(company)
    checkpoint = active_adapter(company)
    enabled = company_config(company).memory.fine_tune.enabled
    applied = (
        checkpoint is not None
        and enabled
        and (checkpoint.embedder_id, checkpoint.dims) == (embedder.embedder_id, embedder.dims)
    )
    return ActiveEmbedder(
        embedder_id=embedder.embedder_id,
        dims=embedder.dims,
        enabled=enabled,
        checkpoint=checkpoint.pk if checkpoint else None,
        applied=applied,
    )


def fine_tune_latest_run(company: Company):
    """The company's newest run (``None`` before the first)."""
    return fine_tune_runs(company).select_related("checkpoint").first()


def adapt_fact_query_vector(
    company: Company, embedder_id: str, vector: np.ndarray, config: CompanyConfig
) -> np.ndarray:
    """The org-fact dense leg's query vector (``orgmemory.query_vectors``): through the
    company's active adapter for this embedder and width when fine-tuning is enabled (in
    ``config``, the company's), as the memory search does; the base vector when none applies
    or its file cannot be loaded."""
    if not config.memory.fine_tune.enabled:
        return vector
    checkpoint_id = (
        AdapterCheckpoint.objects.filter(
            company=company, is_active=True, embedder_id=embedder_id, dims=int(vector.shape[0])
        )
        .values_list("pk", flat=True)
        .first()
    )
    if checkpoint_id is None:
        return vector
    try:
        return apply_query_adapter(checkpoint_id, vector)
    except AdapterUnavailableError as exc:
        logger.warning("query adapter skipped for org facts of company %s: %s", company.pk, exc)
        return vector
