"""Reads that scale out to PostgreSQL streaming replicas, with read-your-writes.

``DATABASE_REPLICA_URLS`` (comma-separated ``postgresql://`` URLs) adds one Django database
alias per replica (``replica_1``, ``replica_2`` …; :func:`replica_database_settings`).
Nothing is sent to a replica by guessing: a read goes there only inside
:func:`reading_from` with an alias :func:`read_alias` chose for the acting principal — the
service layer does that for the read paths that may lag slightly (search, context, lists;
``memory.interfaces.service.MemoryService``). Everything else — every write, every read
inside a transaction, migrations, sessions and auth, the q2 broker — uses ``default``:
:class:`ReplicaRouter` sends writes to the primary unconditionally and never lets a
migration run on a replica, and a read inside an atomic block on the primary stays there.

Read-your-writes. :func:`recording_writes` (installed for every request by
:class:`ReadYourWritesMiddleware`, and usable by any other entry point) watches the
statements the principal's request runs on the primary; when one wrote, the primary's WAL
position after the request (``pg_current_wal_lsn()``) is stored for the principal in the
``synthorg_read_fence`` table on the primary — shared by every gunicorn worker and host,
which the default per-process cache would not be. For ``READ_YOUR_WRITES_SECONDS`` after
that write, the principal's reads go only to a replica that has replayed past that LSN
(``pg_last_wal_replay_lsn()``), else to the primary. The table is UNLOGGED: it is written on
every write request and needs no WAL of its own; after a primary crash it is empty, which at
worst sends a read to a replica that lost nothing anyway.

Replica health (per process): a replica is checked when it is first chosen and again every
``RECHECK_SECONDS``; one that cannot be reached, is not in recovery, or lags by more than
``MAX_LAG_SECONDS`` is skipped until its next check. A read that fails on a replica
(it stopped between checks) is marked down and run again on the primary
(:func:`read_with_fallback`), so the caller never sees the replica's failure.
``/healthz`` reports each replica's state and lag (:func:`replica_health`).
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections

from synthorg.database import REPLICA_ALIAS_PREFIX

logger = logging.getLogger(__name__)

T = TypeVar("T")

FENCE_TABLE = "synthorg_read_fence"
DEFAULTS = {"READ_YOUR_WRITES_SECONDS": 5.0, "MAX_LAG_SECONDS": 10.0, "RECHECK_SECONDS": 5.0}

# What one statement may change. A statement starting WITH is a write when its body has one of
# the verbs; anything else is judged by its first word. SELECT … FOR UPDATE locks but writes
# nothing, and the verbs inside a string literal of a SELECT do not count.
_WRITE_VERBS = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE", "TRUNCATE", "COPY"})
_FIRST_WORD = re.compile(r"^\s*(?:/\*.*?\*/\s*|--[^\n]*\n\s*)*(\w+)", re.S)
_VERB_ANYWHERE = re.compile(r"\b(?:INSERT|UPDATE|DELETE|MERGE)\b", re.I)


def _option(name: str) -> float:
    return float((getattr(settings, "SYNTHORG_REPLICAS", None) or {}).get(name, DEFAULTS[name]))


def replica_aliases() -> list[str]:
    return [alias for alias in settings.DATABASES if alias.startswith(REPLICA_ALIAS_PREFIX)]


def is_replica(alias: str | None) -> bool:
    return alias is not None and alias.startswith(REPLICA_ALIAS_PREFIX)


# --- replica state (per process) -------------------------------------------------------------


@dataclass
class ReplicaState:
    alias: str
    state: str = "unchecked"  # streaming | lagging | down | not_in_recovery | unchecked
    lag_seconds: float | None = None
    replay_lsn: int | None = None
    checked_at: float = 0.0
    error: str | None = None
    reads: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def usable(self) -> bool:
        return self.state == "streaming"

    def report(self) -> dict:
        report: dict[str, Any] = {"ok": self.usable, "state": self.state}
        report["lag_seconds"] = None if self.lag_seconds is None else round(self.lag_seconds, 3)
        if self.error:
            report["error"] = self.error
        return report


_states: dict[str, ReplicaState] = {}
_states_lock = threading.Lock()
_round_robin = itertools.count()


def _state(alias: str) -> ReplicaState:
    with _states_lock:
        if alias not in _states:
            _states[alias] = ReplicaState(alias)
        return _states[alias]


def reset_replica_states() -> None:
    """Forget every replica's checked state (tests; a changed ``DATABASES``)."""
    with _states_lock:
        _states.clear()


_LAG_SQL = (
    "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn() - '0/0'::pg_lsn, "
    "CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() "
    "THEN 0 ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()) END"
)


def check_replica(alias: str) -> ReplicaState:
    """Connect to ``alias`` and record whether it streams and how far it lags.

    Lag is the age of the last replayed transaction while WAL is waiting to be replayed,
    and 0 when everything received has been replayed (an idle primary is not lag).
    """
    state = _state(alias)
    with state.lock:
        try:
            with connections[alias].cursor() as cursor:
                cursor.execute(_LAG_SQL)
                in_recovery, replay_lsn, lag = cursor.fetchone()
        except (OperationalError, InterfaceError) as exc:
            _close_quietly(alias)
            state.state, state.lag_seconds, state.replay_lsn = "down", None, None
            state.error = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else "down"
        else:
            state.error = None
            state.replay_lsn = None if replay_lsn is None else int(replay_lsn)
            state.lag_seconds = None if lag is None else float(lag)
            if not in_recovery:
                state.state = "not_in_recovery"
                state.error = "the server is not a standby (pg_is_in_recovery() is false)"
            elif state.lag_seconds is not None and state.lag_seconds > _option("MAX_LAG_SECONDS"):
                state.state = "lagging"
            else:
                state.state = "streaming"
        state.checked_at = time.monotonic()
    return state


def mark_down(alias: str, exc: BaseException) -> None:
    state = _state(alias)
    with state.lock:
        state.state, state.checked_at = "down", time.monotonic()
        state.error = (str(exc).strip().splitlines() or ["down"])[0][:300]
    _close_quietly(alias)


def _close_quietly(alias: str) -> None:
    with contextlib.suppress(Exception):
        connections[alias].close()


def _fresh(alias: str) -> ReplicaState:
    state = _state(alias)
    if time.monotonic() - state.checked_at >= _option("RECHECK_SECONDS") or not state.checked_at:
        return check_replica(alias)
    return state


# --- read-your-writes fences -------------------------------------------------------------------


def _fence_lsn(principal_key: str) -> int | None:
    """The primary's WAL position after the principal's last write within the window."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            f"SELECT lsn FROM {FENCE_TABLE} WHERE principal = %s "
            "AND written_at > clock_timestamp() - make_interval(secs => %s)",
            [principal_key, _option("READ_YOUR_WRITES_SECONDS")],
        )
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def record_write(principal_key: str) -> None:
    """Fence the principal's reads after a write (its LSN is the primary's current one)."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {FENCE_TABLE} (principal, lsn, written_at) "
            "VALUES (%s, pg_current_wal_lsn() - '0/0'::pg_lsn, clock_timestamp()) "
            "ON CONFLICT (principal) DO UPDATE "
            "SET lsn = EXCLUDED.lsn, written_at = EXCLUDED.written_at",
            [principal_key],
        )


def statement_writes(sql: str) -> bool:
    match = _FIRST_WORD.match(sql)
    if match is None:
        return False
    word = match.group(1).upper()
    if word == "WITH":
        return bool(_VERB_ANYWHERE.search(sql))
    return word in _WRITE_VERBS


_unfenced: contextvars.ContextVar[bool] = contextvars.ContextVar("synthorg_unfenced", default=False)


@contextlib.contextmanager
def unfenced() -> Iterator[None]:
    """Writes of this block do not fence the principal's reads.

    For bookkeeping no read of the principal depends on (an API key's ``last_used_at``, stamped
    on the first request of every minute): fencing it would hold every agent to the primary
    for the window after each stamp.
    """
    token = _unfenced.set(True)
    try:
        yield
    finally:
        _unfenced.reset(token)


class _WriteWatcher:
    def __init__(self) -> None:
        self.wrote = False

    def __call__(self, execute, sql, params, many, context):
        if not self.wrote and not _unfenced.get() and statement_writes(sql):
            self.wrote = True
        return execute(sql, params, many, context)


_recording: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "synthorg_recording_writes", default=False
)


@contextlib.contextmanager
def recording_writes(principal_key: Callable[[], str | None]) -> Iterator[None]:
    """Fence ``principal_key()``'s reads when the block wrote to the primary.

    ``principal_key`` is called after the block (the principal is known only once the view
    has authenticated); None means an anonymous caller, which is not fenced. Inert without
    replicas.
    """
    if not replica_aliases() or _recording.get():
        yield  # no replicas, or an outer block (the request) records for the same principal
        return
    watcher = _WriteWatcher()
    token = _recording.set(True)
    try:
        with connections[DEFAULT_DB_ALIAS].execute_wrapper(watcher):
            yield
    finally:
        _recording.reset(token)
    if watcher.wrote:
        key = principal_key()
        if key:
            try:
                record_write(key)
            except (OperationalError, InterfaceError):
                logger.warning("replicas: could not record the write fence of %s", key)


class ReadYourWritesMiddleware:
    """Record a write fence for the principal of every request that wrote."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with recording_writes(lambda: _request_principal_key(request)):
            return self.get_response(request)


def _request_principal_key(request) -> str | None:
    user = getattr(request, "user", None)
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    key = getattr(user, "pk", None)
    if key is None:
        return None
    # A Principal's pk is already "agent:<id>"/"user:<id>"; a plain Django user is "user:<id>".
    return key if isinstance(key, str) and ":" in key else f"user:{key}"


# --- choosing where a read goes -----------------------------------------------------------------


def read_alias(principal_key: str | None) -> str:
    """The alias ``principal_key``'s next replica-safe read should use.

    ``default`` without replicas, inside a transaction on the primary, or when no replica is
    healthy and (for a principal that just wrote) has replayed past its write.
    """
    aliases = replica_aliases()
    if not aliases or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return DEFAULT_DB_ALIAS
    fence = None
    if principal_key:
        try:
            fence = _fence_lsn(principal_key)
        except (OperationalError, InterfaceError):
            return DEFAULT_DB_ALIAS
    start = next(_round_robin)
    for offset in range(len(aliases)):
        alias = aliases[(start + offset) % len(aliases)]
        state = _fresh(alias)
        if not state.usable:
            continue
        if fence is not None and (state.replay_lsn is None or state.replay_lsn < fence):
            state = check_replica(alias)  # the cached position may be stale: ask once
            if not state.usable or state.replay_lsn is None or state.replay_lsn < fence:
                continue
        return alias
    return DEFAULT_DB_ALIAS


_reading_from: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "synthorg_reading_from", default=None
)


@contextlib.contextmanager
def reading_from(alias: str) -> Iterator[str]:
    """Send the ORM reads and :func:`read_connection` of this block to ``alias``."""
    token = _reading_from.set(alias)
    try:
        yield alias
    finally:
        _reading_from.reset(token)


def current_read_alias() -> str:
    """Where a read of the current block goes: the chosen replica, or ``default``."""
    alias = _reading_from.get()
    if alias is None or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return DEFAULT_DB_ALIAS
    return alias


def read_connection():
    """The connection raw-SQL readers use (``connection`` outside :func:`reading_from`)."""
    return connections[current_read_alias()]


def read_with_fallback(principal_key: str | None, read: Callable[[], T]) -> T:
    """Run ``read`` on the alias chosen for the principal; on a replica failure, on the primary.

    ``read`` must only read (it may run twice). A write inside it still goes to the primary
    (:class:`ReplicaRouter`), but then it is not a read.
    """
    alias = read_alias(principal_key)
    if alias == DEFAULT_DB_ALIAS:
        return read()
    try:
        with reading_from(alias):
            result = read()
    except (OperationalError, InterfaceError) as exc:
        logger.warning("replicas: %s failed a read (%s); reading from the primary", alias, exc)
        mark_down(alias, exc)
        return read()
    _state(alias).reads += 1
    return result


class ReplicaRouter:
    """Writes and migrations on the primary; reads on a replica only inside :func:`reading_from`."""

    def db_for_read(self, model, **hints):
        # Outside a replica read even an object loaded from a replica reads on the primary.
        return current_read_alias()

    def db_for_write(self, model, **hints):
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints):
        # A replica holds the primary's rows: objects read from either relate to each other.
        return True

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return not is_replica(db)


# --- /healthz -----------------------------------------------------------------------------------


def replica_health() -> dict:
    """Each replica's state and lag, checked now (the ``replicas`` entry of ``/healthz``)."""
    replicas = {alias: check_replica(alias).report() for alias in replica_aliases()}
    return {
        "ok": all(item["ok"] for item in replicas.values()),
        "max_lag_seconds": _option("MAX_LAG_SECONDS"),
        "replicas": replicas,
    }
