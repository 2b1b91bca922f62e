"""A q2 cluster's presence on its queue, and the tasks a dead cluster left held (issue 34).

q2's ORM broker hands a task to a worker by moving its row's ``lock`` to ``now + Q_RETRY``
(900 s); the row is deleted once the task is done. A cluster killed with ``kill -9`` while a
worker held a task leaves that row locked, and by q2's own rule the task is delivered again
only when the lock ends — fifteen minutes later. The broker does not record which cluster
holds a row, so another cluster cannot tell a dead holder from a live one by the row alone.

Presence answers that. Every ``serve_qcluster`` (what ``manage.py serve``, ``make worker``
and the production units start) holds a shared PostgreSQL advisory lock named after its
queue for as long as it lives (:class:`ClusterPresence`): a session-level lock, which
PostgreSQL drops the moment the holder's connection ends — a killed cluster's connection
ends with its last process (the sentinel and workers, forked after the lock was taken,
inherit the socket, so orphans still running a task keep it). From :data:`RELEASE_GRACE`
after its start (time for ``serve``'s recovery listener to end what a dead cluster left
behind) a cluster checks every :data:`CHECK_SECONDS` whether any other cluster holds its
queue's lock. While none does, every row of the queue still locked from before its start
was taken by a cluster that is gone; :func:`release_orphaned_tasks` makes those rows due
again and the cluster runs them at once. Rows it took itself are locked until at least its
start plus ``Q_RETRY`` and are never touched.

While another cluster holds the queue's lock (several machines), nothing is released: which
of the locked rows are the dead one's cannot be told, and q2's ``Q_RETRY`` applies — until
the others are gone too. A task run twice this way is harmless by design: every task the
service enqueues is a durable job's (claimed under a lease: a second run finds nothing to
claim) or a scheduled sweep's (idempotent).
"""

from __future__ import annotations

import logging
import threading
import zlib
from datetime import datetime, timedelta

from django.db import DatabaseError, connections
from django.utils import timezone

logger = logging.getLogger("synthorg.cluster_presence")

#: the first key of the two-key advisory lock (namespace of these locks: "q2pr")
LOCK_CLASS = 0x71327072
#: how long a starting cluster waits before it releases a dead cluster's held tasks: its
#: presence lock is held by then, and ``serve``'s recovery listener (every 5 s) has ended the
#: processes a killed cluster left behind
RELEASE_GRACE = timedelta(seconds=10)
#: how often the presence keeper checks its connection (and takes the lock again after the
#: database restarted)
CHECK_SECONDS = 2.0


def queue_lock_key(queue: str) -> int:
    """The second key of the queue's presence lock (a stable non-negative int4)."""
    return zlib.crc32(queue.encode()) & 0x7FFFFFFF


def presence_hold(cursor, queue: str) -> None:
    """Take the queue's shared presence lock on ``cursor``'s session (held until it ends)."""
    cursor.execute("SELECT pg_advisory_lock_shared(%s, %s)", [LOCK_CLASS, queue_lock_key(queue)])


def other_clusters_present(cursor, queue: str) -> int:
    """How many other sessions hold the queue's presence lock (this session excluded)."""
    cursor.execute(
        """
        SELECT count(DISTINCT pid) FROM pg_locks
         WHERE locktype = 'advisory' AND granted
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND classid = %s AND objid = %s AND objsubid = 2
           AND pid <> pg_backend_pid()
        """,
        [LOCK_CLASS, queue_lock_key(queue)],
    )
    return int(cursor.fetchone()[0])


def release_orphaned_tasks(cursor, *, queue: str, started_at: datetime, retry_seconds: int) -> int:
    """Make the queue's rows held since before ``started_at`` due now, when no other cluster
    holds the queue's presence lock (``cursor`` holds it for the caller). Returns how many.

    A row taken at time *t* is locked until *t* + ``retry_seconds``: the rows taken before
    ``started_at`` are exactly those locked until earlier than ``started_at`` +
    ``retry_seconds`` (and still in the future: held, not queued)."""
    if other_clusters_present(cursor, queue):
        return 0
    now = timezone.now()
    cursor.execute(
        """
        UPDATE django_q_ormq SET lock = %s
         WHERE key = %s AND lock > %s AND lock < %s
        """,
        [now, queue, now, started_at + timedelta(seconds=retry_seconds)],
    )
    return cursor.rowcount


class ClusterPresence:
    """The presence keeper of one cluster: a thread holding the queue's presence lock on its
    own connection for the cluster's life, taking it again after the database restarted, and
    from :data:`RELEASE_GRACE` after the start (until every row taken before the start would
    have come free by itself) releasing, every :data:`CHECK_SECONDS`, the held tasks of
    clusters that are gone — a dead predecessor's, or a peer's that died later."""

    def __init__(self, *, queue: str, retry_seconds: int, grace: timedelta = RELEASE_GRACE):
        self.queue = queue
        self.retry_seconds = retry_seconds
        self.grace = grace
        self.started_at = timezone.now()
        self.released = 0  # rows released so far
        self._stop = threading.Event()
        self._held = threading.Event()
        self._thread = threading.Thread(target=self._run, name="q2-presence", daemon=True)

    def start(self, *, wait: float = 5.0) -> ClusterPresence:
        """Start the keeper and wait (up to ``wait`` s) until it holds the lock."""
        self._thread.start()
        self._held.wait(wait)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=CHECK_SECONDS + 5)

    def _run(self) -> None:
        connection = connections["default"]  # this thread's own connection
        release_from = self.started_at + self.grace
        # past it, every row taken before the start has had its q2 lock end anyway
        release_until = self.started_at + timedelta(seconds=self.retry_seconds)
        try:
            while not self._stop.is_set():
                try:
                    with connection.cursor() as cursor:
                        if not self._held.is_set():
                            presence_hold(cursor, self.queue)
                            self._held.set()
                        if release_from <= timezone.now() < release_until:
                            self._release(cursor)
                        else:
                            cursor.execute("SELECT 1")
                except DatabaseError:
                    # The database went away (restart): the lock went with the session.
                    self._held.clear()
                    connection.close()
                self._stop.wait(CHECK_SECONDS)
        finally:
            connection.close()

    def _release(self, cursor) -> None:
        released = release_orphaned_tasks(
            cursor, queue=self.queue, started_at=self.started_at, retry_seconds=self.retry_seconds
        )
        if released:
            self.released += released
            logger.warning("Q2_HELD_TASKS_RELEASED queue=%s tasks=%s", self.queue, released)
