"""The registry of agent *content*: every table that holds what an agent stored or said.

Export (data portability), import and erasure (the right to be forgotten) walk this
registry instead of knowing the tables, so an app that adds a table of agent content
registers it once — in its ``AppConfig.ready``, the way apps register schedules — and the
export command, the export endpoint and ``agent_erase`` cover it from then on::

    register_content_kind(ContentKind(
        name="memory",                 # the JSONL "type" of its rows; unique
        label="memories",              # how counts are reported
        export=export_memories,        # (company, agent | None) -> iterable of JSON dicts
        erase=erase_memories,          # (agent) -> rows deleted
        import_rows=import_memories,   # (company, rows, ImportContext) -> ImportCounts
        order=10,                      # export/import order (referenced kinds first)
    ))

Rules a kind must keep:

* ``export`` yields JSON-serialisable dicts and never the rows of another company; rows
  carry ``agent`` (the agent's *name*) so an export can be imported into another company.
* ``erase`` deletes every row of the agent, in the caller's transaction. A kind names its
  ``table``: if that table is append-only (it carries the ``<table>_append_only`` trigger
  of ``synthorg.db.append_only``, checked in the database at erasure time) its rows are
  never deleted — the erasure reports the kind as *retained* instead. Append-only ledgers
  must therefore not hold memory content in the first place.
* ``erase_subject`` (optional) deletes every row of the company about one end user
  (:mod:`synthorg.subjects`), across all its agents (or one agent's only, when it is given),
  in the caller's transaction, and
  answers ``{label: rows deleted}`` — one entry per kind of row it removed (cascades
  included: a memory's chunks and revisions are counted under their own labels).
  :func:`persistence.services.erasure.subject_erase` walks the kinds that have one.
* ``import_rows`` is idempotent: importing the same file twice adds nothing the second time.
* A row keeps its exported id only when its ``id_signature`` (:func:`row_id_signature`,
  written by ``export``) proves the id is the importing company's; ``import_rows`` never
  decides anything by whether an id exists in another company.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.utils.crypto import constant_time_compare, salted_hmac

if TYPE_CHECKING:
    from persistence.models import Agent, Company


def row_id_signature(company: Company, row_id) -> str:
    """An export's proof that ``row_id`` was this company's (HMAC with the server's key).

    An import keeps a row's id only with this proof; any other id is minted anew for the
    importing company, whether or not another company holds it, so an import's answer never
    tells whether an id exists elsewhere. Rotating ``SECRET_KEY`` voids older proofs (the
    rows are then imported under new ids).
    """
    return salted_hmac(
        "synthorg.export.row-id", f"{company.pk}/{row_id}", algorithm="sha256"
    ).hexdigest()


@dataclass
class ImportContext:
    """Shared across the kinds of one import: agent lookup by name and remapped ids."""

    company: Company
    agents: dict[str, Agent]
    #: ``create_agent(company=..., name=...)``: makes a missing agent (None: never create).
    #: The import service passes :func:`persistence.services.agents.agent_create`.
    create_agent: Callable[..., Agent] | None = None
    remapped: dict[str, str] = field(default_factory=dict)  # old id -> new id

    def owns(self, row_id, signature) -> bool:
        """Whether the file proves ``row_id`` is this company's (:func:`row_id_signature`)."""
        return isinstance(signature, str) and constant_time_compare(
            signature, row_id_signature(self.company, row_id)
        )

    def agent(self, name: str) -> Agent | None:
        """The company's agent called ``name`` (created if allowed), or ``None``."""
        from django.core.exceptions import ValidationError

        from persistence.models import Agent

        if name in self.agents:
            return self.agents[name]
        if not name.strip() or len(name) > Agent._meta.get_field("name").max_length:
            return None
        found = Agent.objects.filter(company=self.company, name=name).first()
        if found is None and self.create_agent is not None:
            try:
                found = self.create_agent(company=self.company, name=name)
            except ValidationError:
                return None
        if found is not None:
            self.agents[name] = found
        return found


@dataclass
class ImportCounts:
    created: int = 0
    skipped: int = 0  # already present (idempotent re-import)
    remapped: int = 0  # created under a new id because the old one belongs elsewhere
    embedded: int = 0  # vectors recomputed (the exporting embedder differs)
    pending: int = 0  # left for the embedding backfill (the embedder failed)

    def add(self, other: ImportCounts) -> None:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass(frozen=True)
class ContentKind:
    name: str
    label: str
    export: Callable[[Company, Agent | None], Iterable[dict[str, Any]]]
    erase: Callable[[Agent], int] | None = None
    import_rows: Callable[[Company, list[dict[str, Any]], ImportContext], ImportCounts] | None = (
        None
    )
    order: int = 100
    table: str = ""  # the database table, to detect an append-only one
    #: rows carry a namespace: ``export`` also takes ``namespaces`` (a tuple of flat names)
    #: and an export filtered by namespace includes only such kinds
    namespaced: bool = False
    #: ``(company, subject, agent) -> {label: rows deleted}``: the kind's rows about one end
    #: user, of every agent of the company (``agent`` None) or of that agent only
    erase_subject: Callable[[Company, str, Agent | None], dict[str, int]] | None = None
    #: rows carry an end user: ``export`` also takes ``subject`` and an export filtered by
    #: subject includes only such kinds
    subjected: bool = False


def deleted_counts(deleted: tuple[int, dict[str, int]]) -> dict[str, int]:
    """``QuerySet.delete()``'s per-model counts keyed by each model's plural name (what a
    subject-erasure receipt reports), zero counts left out."""
    from django.apps import apps

    counts: dict[str, int] = {}
    for label, count in deleted[1].items():
        if count:
            name = str(apps.get_model(label)._meta.verbose_name_plural)
            counts[name] = counts.get(name, 0) + count
    return counts


def table_is_append_only(table: str) -> bool:
    """Whether ``table`` carries the trigger installed by ``synthorg.db.append_only``."""
    from django.db import connection

    if not table:
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " WHERE c.relname = %s AND t.tgname = %s)",
            [table, f"{table}_append_only"],
        )
        return bool(cursor.fetchone()[0])


_kinds: dict[str, ContentKind] = {}


def register_content_kind(kind: ContentKind) -> None:
    _kinds[kind.name] = kind


def content_kinds() -> list[ContentKind]:
    return sorted(_kinds.values(), key=lambda k: (k.order, k.name))


def content_kind(name: str) -> ContentKind | None:
    return _kinds.get(name)
