"""Where the core calls out to the capabilities above it.

The core (``memory.core``) never imports procedural learning, ingestion, prompting or the
interfaces — not even inside a function. Where a core operation must let a capability take
part, it declares a hook here and the capability registers its handler in its
``AppConfig.ready``, as :func:`persistence.services.projects.on_project_closed` and
:func:`persistence.content_registry.register_content_kind` do one layer further down.

Other extension points the core uses live with the thing they extend: schedules
(:mod:`synthorg.schedules`), content kinds for export/import/erasure
(:mod:`persistence.content_registry`), company-config changes
(:mod:`persistence.services.companies`), MCP/REST tools (:mod:`synthorg.tools`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from synthorg.company_config import CompanyConfig

#: ``snapshot(memories)`` → ``{memory id: {key: JSON value}}``: runs inside the archiving
#: transaction, before ``memories`` leave the live set, whichever step archives them
#: (consolidation, retention, expiry, the caps, procedural pruning); what it returns is merged
#: into each one's archive row ``metadata``, where an :data:`ArchiveRestoreHandler` reads it
#: back. A memory it has nothing for is left out of the mapping.
ArchiveSnapshot = Callable[..., Mapping[Any, dict]]

_archive_snapshots: list[ArchiveSnapshot] = []


def on_archiving(snapshot: ArchiveSnapshot) -> None:
    """Register ``snapshot`` (idempotent). Procedural learning keeps a lesson's tiers and
    counters in the archive row this way, so :func:`on_archive_restored` can give them back."""
    if snapshot not in _archive_snapshots:
        _archive_snapshots.append(snapshot)


def archive_snapshots() -> tuple[ArchiveSnapshot, ...]:
    return tuple(_archive_snapshots)


#: ``handler(memory_id=..., company=..., metadata=...)``: runs inside the restore's
#: transaction after the memory is back in the live set; ``metadata`` is the archive row's.
ArchiveRestoreHandler = Callable[..., Any]

_restore_handlers: list[ArchiveRestoreHandler] = []


def on_archive_restored(handler: ArchiveRestoreHandler) -> None:
    """Register ``handler`` (idempotent). Procedural learning gives a pruned lesson back
    its tiers and counters this way."""
    if handler not in _restore_handlers:
        _restore_handlers.append(handler)


def archive_restore_handlers() -> tuple[ArchiveRestoreHandler, ...]:
    return tuple(_restore_handlers)


#: ``source(company, embedder_id)`` → iterable of ``(query text, memory id)``: pairs a
#: capability mines from its own rows for whoever trains a query adapter (no LLM). The
#: memory must be the company's; the pair's positive is its stored vector.
TrainingPairSource = Callable[..., Any]

_pair_sources: dict[str, TrainingPairSource] = {}


def register_training_pair_source(name: str, source: TrainingPairSource) -> None:
    """Register ``source`` under ``name`` (its pairs are counted under that name).
    Procedural learning registers a lesson's activation condition → the lesson this way."""
    _pair_sources[name] = source


def training_pair_sources() -> dict[str, TrainingPairSource]:
    return dict(_pair_sources)


#: ``handler(company=..., trigger=...)``: runs after a company's maintenance (consolidation)
#: completed for real (never for a dry run or a company with consolidation off), outside its
#: transactions. A handler's error is logged and never fails the maintenance.
MaintenanceHandler = Callable[..., Any]

_maintenance_handlers: list[MaintenanceHandler] = []


def on_company_maintained(handler: MaintenanceHandler) -> None:
    """Register ``handler`` (idempotent). Procedural learning exports the wiki this way."""
    if handler not in _maintenance_handlers:
        _maintenance_handlers.append(handler)


def company_maintained_handlers() -> tuple[MaintenanceHandler, ...]:
    return tuple(_maintenance_handlers)


class QueryAdapterUnavailable(Exception):
    """The adapter a :class:`QueryVectorAdapter` chose cannot be applied (its file is gone or
    altered): the search ranks with the base vector and says ``degraded: ["adapter"]``."""


@dataclass(frozen=True)
class QueryVectorAdapter:
    """A transform of the dense leg's query vector that a capability owns (a company's
    trained query adapter), chosen in the search's planning round trip.

    ``plan(config, company_id, embedder_id, dims)`` → ``(sql, params)``, a scalar SQL
    expression evaluating to the adapter to apply (an id, or NULL for none), or ``None``
    when the company's ``config`` (its :class:`~synthorg.company_config.CompanyConfig`)
    turns it off; ``apply(adapter_id, vector)`` → the transformed vector, or raises
    :class:`QueryAdapterUnavailable`."""

    plan: Callable[[CompanyConfig, int, str, int], tuple[str, list] | None]
    apply: Callable[[Any, np.ndarray], np.ndarray]


_query_vector_adapters: list[QueryVectorAdapter] = []


def register_query_vector_adapter(adapter: QueryVectorAdapter) -> None:
    """Register ``adapter`` (idempotent). The capability that trains per-company query
    adapters registers the active one this way; without a registration the base vector
    ranks."""
    if adapter not in _query_vector_adapters:
        _query_vector_adapters.append(adapter)


def query_vector_adapters() -> tuple[QueryVectorAdapter, ...]:
    return tuple(_query_vector_adapters)
