"""A database that cannot be reached answers 503 with ``Retry-After``, never a 500.

While PostgreSQL restarts (the embedded postmaster is brought back by the connection layer,
:mod:`synthorg.db.embedded.base`, in about five seconds), fails over or refuses connections,
a request that needs it raises Django's ``OperationalError`` or ``InterfaceError``. That is
not a bug of the request: API clients get a ``503`` problem (code ``database_unavailable``)
and pages a short ``503`` page, both with ``Retry-After``, so well-behaved clients retry
instead of reporting a failure. The connection is closed so the next request opens a fresh
one. Nothing was written: the request's transaction never committed.
"""

from __future__ import annotations

import logging
import uuid

from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse

from synthorg.api.errors import problem_http_response
from synthorg.api.middleware import is_api_request

logger = logging.getLogger("synthorg.db")

RETRY_AFTER_SECONDS = 5
DETAIL = (
    "The database is unavailable (restarting or unreachable); nothing was changed. "
    f"Retry in {RETRY_AFTER_SECONDS} seconds."
)
PAGE = (
    "<!doctype html><title>Service unavailable</title>"
    "<h1>Service unavailable</h1><p>The database is unavailable (restarting or unreachable); "
    f"nothing was changed. Retry in {RETRY_AFTER_SECONDS} seconds.</p>"
)


class DatabaseUnavailableMiddleware:
    """Listed after ``ApiProblemMiddleware`` so its ``process_exception`` runs first."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        correlation_id = uuid.uuid4().hex
        logger.warning(
            "database unavailable on %s %s [correlation_id=%s]: %s",
            request.method,
            request.path,
            correlation_id,
            exception,
        )
        for connection in connections.all(initialized_only=True):
            connection.close_if_unusable_or_obsolete()
        if is_api_request(request):
            response = problem_http_response(
                status_code=503,
                code="database_unavailable",
                detail=DETAIL,
                correlation_id=correlation_id,
            )
        else:
            response = HttpResponse(PAGE, status=503, content_type="text/html; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
