"""The project's URLs plus views that fail with a bug, for the 500 handler tests, and one whose
database connection dies after the view answered (the session is saved on the way out)."""

import psycopg
from django.db import connection
from django.http import HttpResponse
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from synthorg.urls import handler500  # noqa: F401 (Django reads it from the URLconf)
from synthorg.urls import urlpatterns as project_urlpatterns


class CrashView(APIView):
    @extend_schema(exclude=True)
    def get(self, request):
        return 1 / 0


def crash(request):
    return 1 / 0


def terminate_backend_of(conn) -> None:
    """End ``conn``'s server process from a second connection, as an operator's
    ``pg_terminate_backend`` or a restarting server does."""
    conn.ensure_connection()
    pid = conn.connection.info.backend_pid
    params = {k: v for k, v in conn.get_connection_params().items() if k != "cursor_factory"}
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def session_then_database_gone(request):
    request.session["seen"] = True  # saved by SessionMiddleware after the view
    terminate_backend_of(connection)
    return HttpResponse("answered")


urlpatterns = [
    path("session-then-database-gone", session_then_database_gone),
    path("api/v1/crash", CrashView.as_view()),
    path("crash", crash),
    *project_urlpatterns,
]
