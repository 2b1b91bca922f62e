"""A q2 cluster's presence lock and the release of the tasks a dead cluster held
(:mod:`synthorg.cluster_presence`), on the real broker table and real sessions."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from django_q.models import OrmQ

from synthorg.cluster_presence import (
    ClusterPresence,
    other_clusters_present,
    presence_hold,
    release_orphaned_tasks,
)

QUEUE = "presence-test"
RETRY = 900


def _plant(started_at):
    """Rows of the queue: one queued, one a dead cluster took 10 s before ``started_at``,
    one taken after it (by the live cluster), and one of another queue taken before it."""
    queued = OrmQ.objects.create(key=QUEUE, payload="q", lock=started_at - timedelta(seconds=1))
    dead = OrmQ.objects.create(
        key=QUEUE, payload="d", lock=started_at - timedelta(seconds=10) + timedelta(seconds=RETRY)
    )
    mine = OrmQ.objects.create(
        key=QUEUE, payload="m", lock=started_at + timedelta(seconds=5 + RETRY)
    )
    other = OrmQ.objects.create(
        key="other-queue", payload="o", lock=started_at + timedelta(seconds=RETRY - 10)
    )
    return queued, dead, mine, other


@pytest.fixture(autouse=True)
def _unlock_after():
    """A presence lock taken on the test's own session is session-level: end it."""
    yield
    if connection.connection is not None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock_all()")


def _locks(*rows):
    return [OrmQ.objects.get(pk=r.pk).lock for r in rows]


def _peer():
    """Another session (another cluster's presence connection)."""
    return connection.get_new_connection(connection.get_connection_params())


def _wait(predicate, seconds=20.0):
    done = threading.Event()
    for _ in range(int(seconds * 10)):
        if predicate():
            return True
        done.wait(0.1)
    return predicate()


@pytest.mark.django_db
def test_with_no_other_cluster_only_the_rows_held_from_before_the_start_come_due():
    started_at = timezone.now()
    queued, dead, mine, other = _plant(started_at)
    before = _locks(queued, mine, other)
    with connection.cursor() as cursor:
        presence_hold(cursor, QUEUE)
        released = release_orphaned_tasks(
            cursor, queue=QUEUE, started_at=started_at, retry_seconds=RETRY
        )
    assert released == 1
    assert OrmQ.objects.get(pk=dead.pk).lock <= timezone.now()  # q2 dequeues it now
    assert _locks(queued, mine, other) == before
    # q2's own query for what a worker may take
    due = set(OrmQ.objects.filter(key=QUEUE, lock__lt=timezone.now()).values_list("pk", flat=True))
    assert due == {queued.pk, dead.pk}


@pytest.mark.django_db
def test_a_live_peer_on_the_queue_keeps_every_held_row_until_it_is_gone():
    started_at = timezone.now()
    _, dead, mine, _ = _plant(started_at)
    held = _locks(dead, mine)
    peer = _peer()
    try:
        with peer.cursor() as cursor:
            presence_hold(cursor, QUEUE)
        with connection.cursor() as cursor:
            presence_hold(cursor, QUEUE)
            assert other_clusters_present(cursor, QUEUE) == 1
            assert (
                release_orphaned_tasks(
                    cursor, queue=QUEUE, started_at=started_at, retry_seconds=RETRY
                )
                == 0
            )
            assert _locks(dead, mine) == held
            # a peer on another queue does not count
            assert other_clusters_present(cursor, "other-queue") == 0
    finally:
        peer.close()  # the peer's process died: its session, and its lock, are gone
    with connection.cursor() as cursor:
        # the server ends a closed session's backend (and its locks) a moment later
        assert _wait(lambda: other_clusters_present(cursor, QUEUE) == 0)
        released = release_orphaned_tasks(
            cursor, queue=QUEUE, started_at=started_at, retry_seconds=RETRY
        )
    assert released == 1
    assert OrmQ.objects.get(pk=dead.pk).lock <= timezone.now()
    assert OrmQ.objects.get(pk=mine.pk).lock == held[1]


@pytest.mark.django_db(transaction=True)
def test_the_keeper_holds_the_lock_for_its_life_and_releases_a_dead_clusters_rows():
    presence = ClusterPresence(queue=QUEUE, retry_seconds=RETRY, grace=timedelta(0))
    queued, dead, mine, other = _plant(presence.started_at)
    before = _locks(queued, mine, other)
    presence.start()
    try:
        with connection.cursor() as cursor:
            assert other_clusters_present(cursor, QUEUE) == 1  # the keeper, seen from here
        assert _wait(lambda: presence.released == 1)
        assert OrmQ.objects.get(pk=dead.pk).lock <= timezone.now()
        assert _locks(queued, mine, other) == before
    finally:
        presence.stop()
    with connection.cursor() as cursor:
        assert _wait(lambda: other_clusters_present(cursor, QUEUE) == 0)


@pytest.mark.django_db(transaction=True)
def test_the_keeper_waits_for_its_grace_and_for_a_peer_to_go():
    peer = _peer()
    with peer.cursor() as cursor:
        presence_hold(cursor, QUEUE)
    presence = ClusterPresence(queue=QUEUE, retry_seconds=RETRY, grace=timedelta(0))
    _, dead, _, _ = _plant(presence.started_at)
    held = OrmQ.objects.get(pk=dead.pk).lock
    presence.start()
    try:
        # the keeper checks every CHECK_SECONDS; with the peer present nothing moves
        threading.Event().wait(2.5)
        assert presence.released == 0
        assert OrmQ.objects.get(pk=dead.pk).lock == held
        peer.close()
        assert _wait(lambda: presence.released == 1)
    finally:
        presence.stop()
        if not peer.closed:
            peer.close()
    assert OrmQ.objects.get(pk=dead.pk).lock <= timezone.now()


@pytest.mark.django_db(transaction=True)
def test_within_its_grace_the_keeper_releases_nothing():
    presence = ClusterPresence(queue=QUEUE, retry_seconds=RETRY, grace=timedelta(hours=1))
    _, dead, _, _ = _plant(presence.started_at)
    held = OrmQ.objects.get(pk=dead.pk).lock
    presence.start()
    try:
        threading.Event().wait(2.5)
        assert presence.released == 0
    finally:
        presence.stop()
    assert OrmQ.objects.get(pk=dead.pk).lock == held
