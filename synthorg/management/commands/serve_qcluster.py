"""``manage.py qcluster`` as ``serve`` runs it: the same django-q2 cluster (same options), which
exits as soon as it has stopped.

q2's own command returns once the cluster is up, and the process then waits for its sentinel
in the interpreter's exit (``multiprocessing``'s exit handler). On ``SIGTERM`` the sentinel
stops the pusher, workers and monitor quickly when idle, and the interpreter then tears
itself down: a final garbage collection over everything the process imported (Django, the
app, the embedder), which took longer than the stop itself and, under load, often ran past
``serve``'s stop grace, so supervisord killed the cluster with ``SIGKILL`` on most Ctrl-Cs
(measured: docs/benchmarks/operations.md#stopping-make-run).

Here the command itself waits for the sentinel; once it has ended the exit handlers run
(:mod:`atexit`: the embedded PostgreSQL handle is dropped — the last process out stops the
server — and the log is flushed) and the process ends at once
(:func:`synthorg.supervision.exit_now`), skipping that teardown. Nothing is lost by skipping
it: the sentinel has already saved results and ended every process of the cluster.

The cluster holds its queue's presence lock for its life (:mod:`synthorg.cluster_presence`),
so a cluster started after a ``kill -9`` runs the tasks the dead one held within seconds.
"""

import os

from django.conf import settings
from django_q.cluster import Cluster
from django_q.conf import Conf
from django_q.management.commands.qcluster import Command as QclusterCommand

from synthorg.cluster_presence import ClusterPresence
from synthorg.supervision import exit_now


class Command(QclusterCommand):
    help = "Start a django-q2 cluster (as qcluster) that exits as soon as it has stopped."

    def handle(self, *args, **options):
        settings.SECRET_KEY  # noqa: B018 - q2's check: signing needs it
        if options.get("cluster_name"):
            os.environ["Q_CLUSTER_NAME"] = options["cluster_name"]
        # Before the cluster forks its processes (they inherit the lock's connection, so a
        # worker left running by a killed cluster still counts as present): tasks a dead
        # cluster held are released within seconds, not Q_RETRY (synthorg.cluster_presence).
        ClusterPresence(queue=Conf.CLUSTER_NAME, retry_seconds=Conf.RETRY).start()
        cluster = Cluster()
        cluster.start()
        sentinel = cluster.sentinel
        if options.get("run_once"):
            cluster.stop()
        else:
            # SIGTERM/SIGINT run q2's handler here (Cluster.stop: the sentinel stops its
            # processes, then this join returns); so does a sentinel that died.
            sentinel.join()
        # A sentinel that died by itself (not 0) ends the process in error: supervisord logs
        # it and starts the cluster again.
        exit_now(0 if sentinel.exitcode in (0, None) else 1)
