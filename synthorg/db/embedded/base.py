"""Django's PostgreSQL backend for the embedded server: a crashed server is restarted.

``synthorg.database`` selects this engine when ``DATABASE_URL`` is unset. When opening a
connection fails, :meth:`EmbeddedServer.recover <synthorg.embedded_pg.EmbeddedServer.recover>`
restarts the server if it is down (one process under the ``flock``, bounded back-off) and
the connection is tried once more; any other failure is raised unchanged.

Why here and not a supervisor program: the embedded server is shared by every process of
the checkout (``make run``, ``manage.py`` commands, the test run) and started by whichever
comes first, so no single supervisor owns it. A supervised foreground postmaster would
collide with one another process already started and would be stopped for everyone when
``serve`` stops. Every process that needs the database opens connections through this
backend, so the first one that needs it after a crash brings it back — the q2 cluster
polls the database every few seconds, so that happens without any request arriving.
"""

import psycopg
from django.db.backends.postgresql import base

from synthorg.database import current_embedded_server


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        try:
            return super().get_new_connection(conn_params)
        except psycopg.OperationalError:
            server = current_embedded_server()
            if server is None or not server.recover():
                raise
        return super().get_new_connection(conn_params)
