"""Agent memory in the content registry: export, import and erasure of memories, shared
knowledge and the archive (registered in ``MemoryConfig.ready``).

Rows are exported whole — ids, timestamps, level bindings, supersession, and the vector
(base64 of its little-endian float32 values) with the ``embedder_id`` that produced it —
so an import restores the records as they were. An import deliberately bypasses the write
gate (it restores records, it does not learn new ones) and is idempotent by id: a row whose
id already exists in the company is skipped; a row keeps its id only when the export proves
it is the company's own (``id_signature``, an HMAC of company and id), and every other row
gets a deterministic new id for this company (remapped, and references to it follow) —
whether or not another company holds the old id, so the answer reveals nothing about it.
A vector is reused only when the importing company's embedder has the same id; otherwise
the text is re-embedded, and if the embedder fails the row is stored ``pending`` for the
backfill, as any store would be.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import numpy as np
from django.core.exceptions import ValidationError
from django.utils.dateparse import parse_datetime

from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory, MemoryChunk
from memory.core.services.chunks import chunking_for, chunks_insert, flat_texts, windows_for
from memory.core.services.embeddings import embed_texts
from persistence.content_registry import (
    ContentKind,
    ImportContext,
    ImportCounts,
    deleted_counts,
    row_id_signature,
)
from persistence.models import Agent, Company, Project
from persistence.selectors.embedder import company_embedder
from persistence.services.projects import project_create
from synthorg.company_config.memory import MemoryChunkingConfig
from synthorg.errors import DomainError, InvalidInputError

EXPORT_CHUNK = 500
REMAP_NAMESPACE = uuid.UUID("6f1d2c1e-4b7a-5e0f-9a51-2d8c3b7e9f40")
BAD_ROW = "Row {row_id}: {problem}."

MEMORY_FIELDS = (
    "namespace",
    "category",
    "content",
    "context",
    "source",
    "confidence",
    "tags",
    "subject",
    "is_shared",
    "level",
    "session_id",
    "created_at",
    "updated_at",
    "expires_at",
    "superseded_at",
    "embedder_id",
)
ARCHIVE_FIELDS = (
    "namespace",
    "category",
    "content",
    "context",
    "source",
    "confidence",
    "tags",
    "subject",
    "metadata",
    "created_at",
    "archived_at",
    "mode",
    "restored_at",
)
_RELATIONS = ("company", "agent", "project", "superseded_by")  # set by the importer itself
_DATETIMES = {
    "created_at",
    "updated_at",
    "expires_at",
    "superseded_at",
    "archived_at",
    "restored_at",
}


def _json(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _scoped(queryset, company: Company, agent: Agent | None):
    queryset = queryset.filter(company=company)
    return queryset if agent is None else queryset.filter(agent=agent)


# --- export ------------------------------------------------------------------------------


def _in_namespaces(queryset, namespaces: tuple[str, ...], subject: str | None = None):
    if subject is not None:
        queryset = queryset.filter(subject=subject)
    return queryset.filter(namespace__in=namespaces) if namespaces else queryset


def _export_memories(
    company: Company,
    agent: Agent | None,
    *,
    shared: bool,
    namespaces: tuple[str, ...] = (),
    subject: str | None = None,
) -> Iterator[dict]:
    rows = (
        _in_namespaces(_scoped(Memory.objects, company, agent), namespaces, subject)
        .filter(is_shared=shared)
        .select_related("agent", "project")
        .order_by("created_at", "id")
    )
    for page in _pages(rows.iterator(chunk_size=EXPORT_CHUNK)):
        chunks = _chunk_vectors([row.pk for row in page if row.chunk_count])
        yield from _memory_records(company, page, chunks)


def _pages(rows: Iterator, size: int = EXPORT_CHUNK) -> Iterator[list]:
    page: list = []
    for row in rows:
        page.append(row)
        if len(page) == size:
            yield page
            page = []
    if page:
        yield page


def _chunk_vectors(memory_ids: list) -> dict:
    """memory id → its chunk vectors in window order."""
    found: dict = {}
    if memory_ids:
        for memory_id, vector in (
            MemoryChunk.objects.filter(memory_id__in=memory_ids)
            .order_by("memory_id", "ordinal")
            .values_list("memory_id", "embedding")
        ):
            found.setdefault(memory_id, []).append(vector)
    return found


def _memory_records(company: Company, page: list, chunks: dict) -> Iterator[dict]:
    for row in page:
        record = {
            "id": str(row.pk),
            "id_signature": row_id_signature(company, row.pk),
            "agent": row.agent.name,
        }
        record.update({f: _json(getattr(row, f)) for f in MEMORY_FIELDS})
        record["project"] = row.project.name if row.project_id else None
        record["superseded_by"] = _json(row.superseded_by_id)
        record["embedding"] = _encode_vector(row.embedding)
        # The later windows' vectors (memory.core.chunking), in order.
        record["chunks"] = [_encode_vector(v) for v in chunks.get(row.pk, ())]
        yield record


def export_private_memories(
    company: Company,
    agent: Agent | None,
    namespaces: tuple[str, ...] = (),
    subject: str | None = None,
) -> Iterator[dict]:
    return _export_memories(company, agent, shared=False, namespaces=namespaces, subject=subject)


def export_shared_knowledge(
    company: Company,
    agent: Agent | None,
    namespaces: tuple[str, ...] = (),
    subject: str | None = None,
) -> Iterator[dict]:
    return _export_memories(company, agent, shared=True, namespaces=namespaces, subject=subject)


def export_archive(
    company: Company,
    agent: Agent | None,
    namespaces: tuple[str, ...] = (),
    subject: str | None = None,
) -> Iterator[dict]:
    rows = _in_namespaces(_scoped(ArchivedMemory.objects, company, agent), namespaces, subject)
    rows = rows.select_related("agent")
    for row in rows.order_by("archived_at", "id").iterator(chunk_size=EXPORT_CHUNK):
        record = {
            "id": str(row.pk),
            "id_signature": row_id_signature(company, row.pk),
            "agent": row.agent.name,
            "original_id": str(row.original_id),
            "original_id_signature": row_id_signature(company, row.original_id),
        }
        record.update({f: _json(getattr(row, f)) for f in ARCHIVE_FIELDS})
        record["summary_memory_id"] = _json(row.summary_memory_id)
        record["restored_memory_id"] = _json(row.restored_memory_id)
        yield record


# --- erasure -----------------------------------------------------------------------------


def erase_private_memories(agent: Agent) -> int:
    # The first vector and the search index live in the row, the later windows' vectors in
    # its chunk rows, deleted with it (counted: the memories).
    return _delete_memories(Memory.objects.filter(agent=agent, is_shared=False))


def erase_shared_knowledge(agent: Agent) -> int:
    return _delete_memories(Memory.objects.filter(agent=agent, is_shared=True))


def _delete_memories(queryset) -> int:
    return queryset.delete()[1].get(Memory._meta.label, 0)


def erase_archive(agent: Agent) -> int:
    return ArchivedMemory.objects.filter(agent=agent).delete()[0]


def erase_subject_memories(
    company: Company, subject: str, agent: Agent | None = None
) -> dict[str, int]:
    """Every agent's (or ``agent``'s) private memories about ``subject``, with their chunk
    vectors and the texts corrections replaced (revisions), and the lessons on them."""
    rows = _scoped(Memory.objects, company, agent).filter(subject=subject, is_shared=False)
    return deleted_counts(rows.delete())


def erase_subject_shared(
    company: Company, subject: str, agent: Agent | None = None
) -> dict[str, int]:
    rows = _scoped(Memory.objects, company, agent).filter(subject=subject, is_shared=True)
    counts = deleted_counts(rows.delete())
    # reported apart from the private memories, as the agent erasure does
    if "memories" in counts:
        counts["shared knowledge"] = counts.pop("memories")
    return counts


def erase_subject_archive(
    company: Company, subject: str, agent: Agent | None = None
) -> dict[str, int]:
    rows = _scoped(ArchivedMemory.objects, company, agent).filter(subject=subject)
    return deleted_counts(rows.delete())


# --- import ------------------------------------------------------------------------------


def _uuid(value, row_id, field: str) -> uuid.UUID | None:
    if value in (None, ""):
        return None
    try:
        return uuid.UUID(str(value))
    except ValueError as exc:
        raise InvalidInputError(
            BAD_ROW.format(row_id=row_id, problem=f"{field} is not a UUID"), code="invalid_export"
        ) from exc


def _fields(row: dict, names) -> dict:
    values = {}
    for name in names:
        if name not in row:
            continue
        value = row[name]
        if name in _DATETIMES and value is not None:
            try:
                parsed = parse_datetime(str(value))
            except ValueError:
                parsed = None
            if parsed is None or parsed.tzinfo is None:
                raise InvalidInputError(
                    BAD_ROW.format(
                        row_id=row.get("id"), problem=f"{name} is not an ISO datetime with offset"
                    ),
                    code="invalid_export",
                )
            value = parsed
        values[name] = value
    return values


def _validate(instance, *, exclude) -> None:
    """Field checks only (types, choices, lengths): no query per row. The table's CHECK
    constraints still guard the insert; a violation fails the whole import as a 400."""
    try:
        instance.clean_fields(exclude=exclude)
    except (ValidationError, TypeError, ValueError) as exc:
        problem = "; ".join(
            f"{field}: {' '.join(map(str, messages))}"
            for field, messages in getattr(exc, "message_dict", {"row": [exc]}).items()
        )
        raise InvalidInputError(
            BAD_ROW.format(row_id=instance.pk, problem=problem), code="invalid_export"
        ) from exc


def _encode_vector(vector) -> str | None:
    """A vector as base64 of little-endian float32 (a sixth of its JSON-number size)."""
    if vector is None:
        return None
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _vector(value, dims: int | None) -> list[float] | None:
    """The exported vector if it is reusable (``dims`` finite numbers), else ``None``."""
    if isinstance(value, str):
        try:
            array = np.frombuffer(base64.b64decode(value, validate=True), dtype="<f4")
        except (ValueError, binascii.Error):
            return None
    elif isinstance(value, list) and all(isinstance(x, int | float) for x in value):
        array = np.asarray(value, dtype=np.float64)
    else:
        return None
    if dims is None or array.shape != (dims,) or not np.isfinite(array).all():
        return None
    return array.astype(np.float32).tolist()


def _owners(model, ids) -> dict[uuid.UUID, int]:
    """``{id: company_id}`` of the rows of ``model`` that exist among ``ids``."""
    ids = list(ids)
    owners: dict[uuid.UUID, int] = {}
    for start in range(0, len(ids), EXPORT_CHUNK):
        chunk = ids[start : start + EXPORT_CHUNK]
        owners.update(model.objects.filter(pk__in=chunk).values_list("pk", "company_id"))
    return owners


def _remap(company: Company, raw: uuid.UUID) -> uuid.UUID:
    """The id a row the company cannot prove its own gets: the same for the same file."""
    return uuid.uuid5(REMAP_NAMESPACE, f"{company.pk}/{raw}")


def _target_ids(model, rows, raw_ids, company: Company, ctx: ImportContext, counts: ImportCounts):
    """For each id of the file, the id to import it under, or ``None`` when the company
    already has it (or the file repeats it). Two queries per 500 rows, not one per row.

    A row keeps its id only when its ``id_signature`` proves the id is the company's own;
    every other row is remapped to a deterministic id (:func:`_remap`), so importing the
    same file twice finds the remapped row the second time. Whether the old id exists in
    another company is never asked: the answer is the same either way.
    """
    own = [ctx.owns(raw, row.get("id_signature")) for row, raw in zip(rows, raw_ids, strict=True)]
    targets_wanted = [
        raw if is_own else _remap(company, raw) for raw, is_own in zip(raw_ids, own, strict=True)
    ]
    owners = _owners(model, [*raw_ids, *targets_wanted])
    targets: list[uuid.UUID | None] = []
    seen: set[uuid.UUID] = set()
    for raw, is_own, wanted in zip(raw_ids, own, targets_wanted, strict=True):
        if owners.get(raw) == company.pk or raw in seen:
            counts.skipped += 1  # the company's own row, still there
            targets.append(None)
            continue
        seen.add(raw)
        if not is_own:
            ctx.remapped[str(raw)] = str(wanted)
        if owners.get(wanted) == company.pk:
            counts.skipped += 1  # imported before under this id
            targets.append(None)
            continue
        if owners.get(wanted) is not None:
            # Unreachable but for an HMAC or UUID5 collision: never overwrite another row.
            wanted = uuid.uuid4()
            ctx.remapped[str(raw)] = str(wanted)
        if not is_own:
            counts.remapped += 1
        targets.append(wanted)
    return targets


def _project(company: Company, name: str | None, cache: dict) -> Project | None:
    if not name:
        return None
    name = str(name)
    if name not in cache:
        cache[name] = Project.objects.filter(company=company, name=name).first() or (
            project_create(company=company, name=name)
        )
    return cache[name]


def import_memories(company: Company, rows: list[dict], ctx: ImportContext) -> ImportCounts:
    counts = ImportCounts()
    new = _new_memories(company, rows, ctx, counts)
    if not new:
        return counts
    windows = _memory_vectors(company, new, counts)
    for memory in (m for m, _ in new):
        _validate(memory, exclude=[*_RELATIONS, "embedding", "search_vector", "doc_length"])
    Memory.objects.bulk_create([m for m, _ in new], batch_size=EXPORT_CHUNK)
    chunks_insert(
        company.pk,
        [
            (m.pk, ordinal, vector)
            for m, _ in new
            for ordinal, vector in enumerate(windows.get(m.pk, ()), start=1)
        ],
        next((m.embedder_id for m, _ in new if windows.get(m.pk)), ""),
    )
    counts.created += len(new)
    _link_superseded(company, new, ctx)
    return counts


def _new_memories(
    company: Company, rows: list[dict], ctx: ImportContext, counts: ImportCounts
) -> list[tuple[Memory, dict]]:
    """The memories the file's rows become (unsaved, pending embedding), each with its row;
    rows :func:`_target_ids` skips are left out."""
    projects: dict[str, Project] = {}
    new: list[tuple[Memory, dict]] = []
    raw_ids = [_uuid(row.get("id"), row.get("id"), "id") or uuid.uuid4() for row in rows]
    targets = _target_ids(Memory, rows, raw_ids, company, ctx, counts)
    for row, raw_id, target in zip(rows, raw_ids, targets, strict=True):
        if target is None:
            continue
        agent = ctx.agent(str(row.get("agent") or ""))
        if agent is None:
            raise InvalidInputError(
                BAD_ROW.format(row_id=raw_id, problem=f"no agent {row.get('agent')!r}"),
                code="invalid_export",
            )
        try:
            memory = Memory(
                id=target,
                company=company,
                agent=agent,
                project=_project(company, row.get("project"), projects),
                **_fields(row, MEMORY_FIELDS),
            )
        except (ValidationError, TypeError, ValueError) as exc:
            raise InvalidInputError(
                BAD_ROW.format(row_id=raw_id, problem=str(exc)), code="invalid_export"
            ) from exc
        memory.embedder_id = ""
        memory.embedding_status = Memory.EmbeddingStatus.PENDING
        new.append((memory, row))
    return new


def _memory_vectors(
    company: Company, new: list[tuple[Memory, dict]], counts: ImportCounts
) -> dict[uuid.UUID, list]:
    """Give each new memory its vectors: the exported ones when they fit the company's
    embedder and chunking, else embedded now (pending when the embedder fails). Returns each
    memory's window vectors after the first, by memory id."""
    try:
        embedder = company_embedder(company)
        current_id, current_dims = embedder.embedder_id, embedder.dims
    except DomainError:  # the company's embedder is unusable: every row goes pending
        embedder, current_id, current_dims = None, None, None
    chunking = chunking_for(company)
    windows: dict[uuid.UUID, list] = {}  # memory id → its window vectors after the first
    to_embed: list[Memory] = []
    for memory, row in new:
        if not _reuse_exported(memory, row, chunking, current_id, current_dims, windows):
            to_embed.append(memory)
    for start in range(0, len(to_embed), EXPORT_CHUNK):
        chunk = to_embed[start : start + EXPORT_CHUNK]
        groups = [windows_for(m.content, m.context, chunking) for m in chunk]
        texts = flat_texts(groups)
        embedded = embed_texts(company=company, texts=texts, embedder=embedder)
        if embedded.vectors is None:
            counts.pending += len(chunk)
            continue
        by_text = dict(zip(texts, embedded.vectors, strict=True))
        for memory, group in zip(chunk, groups, strict=True):
            memory.embedding = by_text[group[0]].tolist()
            memory.embedder_id = embedded.embedder_id
            memory.embedding_status = Memory.EmbeddingStatus.READY
            memory.chunk_count = len(group) - 1
            windows[memory.pk] = [by_text[text] for text in group[1:]]
            counts.embedded += 1
    return windows


def _reuse_exported(
    memory: Memory,
    row: dict,
    chunking: MemoryChunkingConfig,
    current_id: str | None,
    current_dims: int | None,
    windows: dict[uuid.UUID, list],
) -> bool:
    """Take the row's exported vectors when whole: the first vector and one per later window
    this company's chunking gives, from the company's current embedder (else every window is
    embedded again: False)."""
    count = len(windows_for(memory.content, memory.context, chunking))
    vector = _vector(row.get("embedding"), current_dims)
    exported = row.get("chunks") or []
    later = [_vector(v, current_dims) for v in exported] if isinstance(exported, list) else []
    if (
        vector is None
        or row.get("embedder_id") != current_id
        or len(later) != count - 1
        or any(v is None for v in later)
    ):
        return False
    memory.embedding = vector
    memory.embedder_id = row["embedder_id"]
    memory.embedding_status = Memory.EmbeddingStatus.READY
    memory.chunk_count = len(later)
    windows[memory.pk] = later
    return True


def _link_superseded(company: Company, new: list[tuple[Memory, dict]], ctx: ImportContext) -> None:
    """Supersession links, now that every row of the file exists (ids may be remapped)."""
    for memory, row in new:
        old = row.get("superseded_by")
        if old:
            target = ctx.remapped.get(str(old), str(old))
            if Memory.objects.filter(pk=target, company=company).exists():
                Memory.objects.filter(pk=memory.pk).update(superseded_by_id=target)


def _original_id(row: dict, raw_id, company: Company, ctx: ImportContext) -> uuid.UUID:
    """The archived row's ``original_id``: kept when proven the company's own, else the id
    its memory got in this import (or would get: :func:`_remap`)."""
    original = _uuid(row.get("original_id"), raw_id, "original_id")
    if original is None:
        return uuid.uuid4()
    if ctx.owns(original, row.get("original_id_signature")):
        return original
    return uuid.UUID(ctx.remapped.get(str(original)) or str(_remap(company, original)))


def import_archive(company: Company, rows: list[dict], ctx: ImportContext) -> ImportCounts:
    counts = ImportCounts()
    new = []
    raw_ids = [_uuid(row.get("id"), row.get("id"), "id") or uuid.uuid4() for row in rows]
    targets = _target_ids(ArchivedMemory, rows, raw_ids, company, ctx, counts)
    originals = [
        _original_id(row, raw_id, company, ctx) for row, raw_id in zip(rows, raw_ids, strict=True)
    ]
    taken: set[uuid.UUID] = set()
    for start in range(0, len(originals), EXPORT_CHUNK):
        chunk = originals[start : start + EXPORT_CHUNK]
        taken.update(
            ArchivedMemory.objects.filter(original_id__in=chunk).values_list(
                "original_id", flat=True
            )
        )
    for row, raw_id, target, original in zip(rows, raw_ids, targets, originals, strict=True):
        if target is None:
            continue
        agent = ctx.agent(str(row.get("agent") or ""))
        if agent is None:
            raise InvalidInputError(
                BAD_ROW.format(row_id=raw_id, problem=f"no agent {row.get('agent')!r}"),
                code="invalid_export",
            )
        if original in taken:
            original = uuid.uuid4()  # original ids are unique across the table
        taken.add(original)
        links = {}
        for field in ("summary_memory_id", "restored_memory_id"):
            value = _uuid(row.get(field), raw_id, field)
            links[field] = (
                None if value is None else uuid.UUID(ctx.remapped.get(str(value), str(value)))
            )
        archived = ArchivedMemory(
            id=target,
            company=company,
            agent=agent,
            original_id=original,
            **links,
            **_fields(row, ARCHIVE_FIELDS),
        )
        if archived.restored_at is not None and archived.restored_memory_id is None:
            archived.restored_at = None
        _validate(archived, exclude=[*_RELATIONS, "maintenance_run"])
        new.append(archived)
    ArchivedMemory.objects.bulk_create(new, batch_size=EXPORT_CHUNK)
    counts.created += len(new)
    return counts


CONTENT_KINDS = (
    ContentKind(
        name="memory",
        label="memories",
        export=export_private_memories,
        erase=erase_private_memories,
        import_rows=import_memories,
        order=10,
        namespaced=True,
        subjected=True,
        erase_subject=erase_subject_memories,
        table=Memory._meta.db_table,
    ),
    ContentKind(
        name="shared_knowledge",
        label="shared knowledge",
        export=export_shared_knowledge,
        erase=erase_shared_knowledge,
        import_rows=import_memories,
        order=11,
        namespaced=True,
        subjected=True,
        erase_subject=erase_subject_shared,
        table=Memory._meta.db_table,
    ),
    ContentKind(
        name="archived_memory",
        label="archived memories",
        export=export_archive,
        erase=erase_archive,
        import_rows=import_archive,
        order=20,
        namespaced=True,
        subjected=True,
        erase_subject=erase_subject_archive,
        table=ArchivedMemory._meta.db_table,
    ),
)
