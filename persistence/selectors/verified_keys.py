"""A per-process cache of verified agent API keys, re-validated against the database on every use.

Resolving a key through the ORM builds a three-table join (key → agent → company) and turns
the row into three model instances, the company's whole config JSON included, on every
request: a large share of a trivial API request's CPU (measured:
docs/benchmarks/http.md#per-request-levers-measured-by-hand). The cache keeps those
objects per key digest, and each use asks PostgreSQL one indexed question instead (a
prepared statement: :mod:`synthorg.db.prepared`): are the three rows still the very row
versions the cached objects were read from?

A row version is ``(ctid, xmin)``: PostgreSQL writes a new version of a row on every UPDATE
(new ``ctid``, and the updating transaction's ``xmin``), so a revocation, an expiry change,
an agent's deactivation or any change to its company, made by any process, is seen by the
very next request exactly as without the cache; a deleted row answers nothing. The versions
are read in the same statement as the cached values, so the two always agree. Expiry is
checked against the clock on every use (by the caller), and unknown or unusable keys are
never cached, so a new key works at once and random keys cannot fill the cache.

Each use gets its own copies of the cached instances: a request that changes its key, agent
or company object (``last_used_at``, say) never changes what another request sees.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from dataclasses import dataclass

from django.db import connection
from django.db.models.expressions import RawSQL

from persistence.models import Agent, AgentApiKey, Company
from synthorg.db.prepared import execute_prepared

#: Each entry holds a key, its agent and its company (with its config): a few KiB.
DEFAULT_MAX_ENTRIES = 4096

_KEY_TABLE = AgentApiKey._meta.db_table
_AGENT_TABLE = Agent._meta.db_table
_COMPANY_TABLE = Company._meta.db_table


def _versions_sql(key: str, agent: str, company: str) -> str:
    return (
        f"concat_ws(',', {key}.ctid, {key}.xmin, {agent}.ctid, {agent}.xmin, "
        f"{company}.ctid, {company}.xmin)"
    )


def _quoted(name: str) -> str:
    return f'"{name}"'


#: Added to the ORM's ``select_related("agent__company")`` query (which joins the tables
#: under their own names) so the versions come from the same snapshot as the values.
ROW_VERSIONS = "row_versions"


def row_versions_expression() -> RawSQL:
    return RawSQL(
        _versions_sql(_quoted(_KEY_TABLE), _quoted(_AGENT_TABLE), _quoted(_COMPANY_TABLE)), ()
    )


_CHECK_SQL = (
    f"SELECT {_versions_sql('k', 'a', 'c')} "
    f"FROM {_quoted(_KEY_TABLE)} k "
    f"JOIN {_quoted(_AGENT_TABLE)} a ON a.id = k.agent_id "
    f"JOIN {_quoted(_COMPANY_TABLE)} c ON c.id = a.company_id "
    "WHERE k.id = %s AND k.key_hash = %s"
)


@dataclass(frozen=True)
class _Entry:
    key: AgentApiKey  # with .agent and .agent.company loaded; never handed out itself
    versions: str


def copy_key(key: AgentApiKey) -> AgentApiKey:
    """``key`` with its own copies of its agent and company (model instances are mutable)."""
    company = copy.copy(key.agent.company)
    agent = copy.copy(key.agent)
    agent.company = company
    clone = copy.copy(key)
    clone.agent = agent
    return clone


class VerifiedKeyCache:
    """LRU of key digest → verified key (agent and company loaded), at most ``max_entries``."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be zero or more, got {max_entries}")
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def get(self, digest: str) -> AgentApiKey | None:
        """A copy of the cached key for ``digest`` if its rows are unchanged, else ``None``
        (and the entry is dropped). One query when an entry exists, none otherwise."""
        with self._lock:
            entry = self._entries.get(digest)
        if entry is None:
            with self._lock:
                self.misses += 1
            return None
        rows = execute_prepared(connection, _CHECK_SQL, [entry.key.pk, digest])
        row = rows[0] if rows else None
        with self._lock:
            if row is None or row[0] != entry.versions:
                if self._entries.get(digest) is entry:
                    del self._entries[digest]
                self.misses += 1
                return None
            if digest in self._entries:
                self._entries.move_to_end(digest)
            self.hits += 1
        return copy_key(entry.key)

    def put(self, digest: str, key: AgentApiKey, versions: str) -> None:
        """Remember ``key`` (read together with ``versions``); a copy is stored."""
        if self.max_entries == 0:
            return
        entry = _Entry(key=copy_key(key), versions=versions)
        with self._lock:
            self._entries[digest] = entry
            self._entries.move_to_end(digest)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def discard(self, digest: str) -> None:
        with self._lock:
            self._entries.pop(digest, None)


verified_keys = VerifiedKeyCache()
