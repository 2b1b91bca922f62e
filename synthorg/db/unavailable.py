"""A database that cannot be reached answers 503 with ``Retry-After``, never a 500.

While PostgreSQL restarts (the embedded postmaster is brought back by the connection layer,
:mod:`synthorg.db.embedded.base`, in about five seconds), fails over or refuses connections,
a request that needs it raises Django's (or psycopg's) ``OperationalError`` or
``InterfaceError`` — "connection refused", "the database system is starting up / shutting
down", "terminating connection due to administrator command", a connection already closed.
That is not a bug of the request: API clients get a ``503`` problem (code
``database_unavailable``) and pages a short ``503`` page, both with ``Retry-After``, so
well-behaved clients retry instead of reporting a failure. The broken connection is closed
so the next request opens a fresh one. Nothing was written: the request's transaction never
committed.

Every interface ends up here:

* a view (DRF, the console, the admin): DRF's exception handler leaves these errors to
  Django, whose middleware calls :meth:`DatabaseUnavailableMiddleware.process_exception`;
* a middleware after the view (the session saved as the response leaves): Django answers
  it through ``handler500``, which is :func:`server_error`;
* the MCP server (its own ASGI app): :func:`synthorg.mcp.http` and the tool runner ask
  :func:`is_database_unavailable` and answer the same problem;
* bookkeeping written after the response (the request log): skipped with a warning
  (:mod:`synthorg.after_response`).
"""

from __future__ import annotations

import logging
import sys
import uuid

import psycopg
from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse
from django.views import defaults

from synthorg.api.errors import problem_body, problem_http_response
from synthorg.api.middleware import is_api_request

logger = logging.getLogger("synthorg.db")

RETRY_AFTER_SECONDS = 5
CODE = "database_unavailable"
DETAIL = (
    "The database is unavailable (restarting or unreachable); nothing was changed. "
    f"Retry in {RETRY_AFTER_SECONDS} seconds."
)
PAGE = (
    "<!doctype html><title>Service unavailable</title>"
    "<h1>Service unavailable</h1><p>The database is unavailable (restarting or unreachable); "
    f"nothing was changed. Retry in {RETRY_AFTER_SECONDS} seconds.</p>"
)
_UNAVAILABLE = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)


def is_database_unavailable(exception: BaseException | None) -> bool:
    """Whether ``exception`` says the database cannot be used now (not a bug of the caller)."""
    return isinstance(exception, _UNAVAILABLE)


def close_broken_connections() -> None:
    """Close this thread's connections that stopped working, so the next use reconnects."""
    for connection in connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()


def unavailable_problem(correlation_id: str) -> dict:
    """The 503 problem body (for callers that answer outside Django, such as MCP)."""
    return problem_body(
        status_code=503,
        code=CODE,
        detail=DETAIL,
        extra={"correlation_id": correlation_id, "retry_after": RETRY_AFTER_SECONDS},
    )


def log_unavailable(where: str, exception: BaseException) -> str:
    """Log the outage (a warning, no traceback: not a bug) and return its correlation id."""
    correlation_id = uuid.uuid4().hex
    logger.warning(
        "database unavailable on %s [correlation_id=%s]: %s",
        where,
        correlation_id,
        str(exception).strip(),
    )
    return correlation_id


def unavailable_response(request: HttpRequest, exception: BaseException) -> HttpResponse:
    """The 503 for ``request``: a problem under ``/api/``, a page elsewhere; ``Retry-After``."""
    correlation_id = log_unavailable(f"{request.method} {request.path}", exception)
    close_broken_connections()
    if is_api_request(request):
        response = problem_http_response(
            status_code=503,
            code=CODE,
            detail=DETAIL,
            correlation_id=correlation_id,
            retry_after=RETRY_AFTER_SECONDS,
        )
    else:
        response = HttpResponse(PAGE, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseUnavailableMiddleware:
    """Listed after ``ApiProblemMiddleware`` so its ``process_exception`` runs first."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_database_unavailable(exception):
            return None
        return unavailable_response(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: an exception no view caught — one a middleware raised after the view
    (the session saved as the response leaves, say). A database that went away answers 503
    here as well; anything else is Django's 500 (under ``/api/`` turned into a problem by
    :class:`synthorg.api.middleware.ApiProblemMiddleware`)."""
    exception = sys.exc_info()[1]
    if exception is not None and is_database_unavailable(exception):
        return unavailable_response(request, exception)
    return defaults.server_error(request)
