"""Bookkeeping written after the response is sent: a per-request buffer, flushed on close.

A request's bookkeeping rows (the request log, the core-policy delivery) do not change its
answer, so the client need not wait for them. :class:`AfterResponseMiddleware` opens a
buffer for each request; :func:`after_response` adds an item to it under a flush function;
when the server closes the response (after the body is sent: the WSGI ``close()``, which
Django's test client calls too) each flush function runs **once** with all its items, in the
order they were added — e.g. one bulk ``INSERT`` for every request-log row of the request.

Outside a request (the MCP server's ASGI path, stdio, commands, tasks) there is no buffer and
the flush function runs at once with the one item, as before. Entries are not lost when the
request succeeds: the flush runs whatever the status, in the worker that served the request,
before Django's ``request_finished`` closes the connection. A flush that fails is logged
(``synthorg.after_response``) — the response is already sent — and the other flushes still
run. A flush the database cannot take (it is restarting or unreachable) is skipped with a
warning, inside a request and outside one: a call that was answered — or is about to be, on
the MCP path — never fails because its bookkeeping could not be written. The flush runs with
:func:`synthorg.db.replicas.unfenced`: bookkeeping never holds the principal's next reads to
the primary.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Sequence
from typing import Any

from synthorg.db.replicas import unfenced
from synthorg.db.unavailable import close_broken_connections, is_database_unavailable

logger = logging.getLogger(__name__)

Flush = Callable[[Sequence[Any]], None]

_buffer: contextvars.ContextVar[RequestBuffer | None] = contextvars.ContextVar(
    "synthorg_after_response", default=None
)


class RequestBuffer:
    """The items of one request, grouped by flush function in the order first added."""

    def __init__(self) -> None:
        self._groups: dict[Flush, list[Any]] = {}

    def add(self, flush: Flush, item: Any) -> None:
        self._groups.setdefault(flush, []).append(item)

    def flush(self) -> None:
        groups, self._groups = self._groups, {}
        for flush, items in groups.items():
            try:
                _run(flush, items)
            except Exception:
                logger.exception("after-response flush %s lost %d item(s)", flush, len(items))


def _run(flush: Flush, items: Sequence[Any]) -> None:
    """``flush(items)``; while the database is unavailable the items are dropped with a
    warning (bookkeeping never turns an answered call into an error)."""
    try:
        with unfenced():
            flush(items)
    except Exception as exc:
        if not is_database_unavailable(exc):
            raise
        logger.warning(
            "after-response flush %s skipped %d item(s): the database is unavailable (%s)",
            getattr(flush, "__qualname__", flush),
            len(items),
            str(exc).strip(),
        )
        close_broken_connections()


def after_response(flush: Flush, item: Any) -> None:
    """Run ``flush([item, …])`` after the current response is sent, or now outside one."""
    buffer = _buffer.get()
    if buffer is None:
        _run(flush, [item])
        return
    buffer.add(flush, item)


class AfterResponseMiddleware:
    """Opens the request's buffer and flushes it when the response is closed."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        buffer = RequestBuffer()
        token = _buffer.set(buffer)
        try:
            response = self.get_response(request)
        except BaseException:
            buffer.flush()  # an exception answered by an outer handler: still recorded
            raise
        finally:
            _buffer.reset(token)
        # Django calls the closers before request_finished (which closes the connection).
        response._resource_closers.append(buffer.flush)
        return response
