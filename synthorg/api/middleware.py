"""problem+json for everything under ``/api/`` that DRF's exception handler never sees.

* Before the view: a NUL character or a lone surrogate in the path, the query string or a
  request header (``X-Company`` is looked up in the database) is a 400
  ``invalid_characters`` (they cannot reach PostgreSQL; see
  :mod:`synthorg.api.input_safety`). A path or query string whose percent-decoded bytes are
  not UTF-8 is a 400 ``invalid_utf8``: the server (uvicorn) and Django would otherwise
  replace them with U+FFFD, and an id named in the path would be stored changed.
* An exception that escaped the view (a bug) is logged with its traceback under a fresh
  correlation id and answered ``500`` with that id; an oversized body is a ``413``.
* Any other non-problem error response (Django's HTML 404 for an unknown path or a
  malformed id, a CSRF failure, a 405 from a plain Django view) is replaced by a problem
  with the same status.

Nothing here depends on ``DEBUG``: Django's debug pages never reach an API client.
"""

from __future__ import annotations

import logging
import uuid
from urllib.parse import unquote_to_bytes

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import HttpRequest, HttpResponse

from synthorg.api.errors import (
    PROBLEM_CONTENT_TYPE,
    problem_http_response,
    request_too_large_detail,
)
from synthorg.api.input_safety import INVALID_UTF8, NUL_OR_SURROGATE, has_forbidden_text, is_utf8

logger = logging.getLogger("synthorg.api")

API_PREFIX = "/api/"
INTERNAL_ERROR = (
    "The server failed to process the request. Quote the correlation id when reporting it."
)
_GENERIC_DETAIL = {
    404: "No API endpoint or object matches this URL.",
    405: "This method is not allowed on this URL.",
    403: "The request was refused.",
    400: "The request is malformed.",
}
_GENERIC_CODE = {
    400: "bad_request",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    413: "request_too_large",
}


def is_api_request(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


def _unsafe_part(request: HttpRequest) -> str | None:
    # path_info is already percent-decoded; the raw query string is not.
    if has_forbidden_text(request.path_info):
        return "path"
    for name, value in request.META.items():
        if name.startswith("HTTP_") and isinstance(value, str) and has_forbidden_text(value):
            return "header " + name[5:].replace("_", "-").title()
    raw_query = request.META.get("QUERY_STRING", "")
    if "%00" in raw_query or "\x00" in raw_query:
        return "query"
    for key, values in request.GET.lists():
        if any(has_forbidden_text(text) for text in (key, *values)):
            return "query"
    return None


def _refused(part: str, message: str, code: str) -> HttpResponse:
    return problem_http_response(
        status_code=400,
        code=code,
        detail=f"{part}: {message}",
        errors=[{"field": part, "message": message, "code": code}],
    )


def _wsgi_bytes(text: str) -> bytes | None:
    try:
        return text.encode("latin-1")  # WSGI carries bytes as latin-1 text
    except UnicodeEncodeError:
        return None


def _raw_path(request: HttpRequest) -> bytes | None:
    """The path as the client sent it (percent-escapes kept), if the server passed it on.

    Django's own ``path_info`` cannot tell: behind the ASGI server invalid bytes are already
    U+FFFD, and under WSGI Django re-percent-encodes them."""
    raw = (request.META.get("asgi.scope") or {}).get("raw_path")
    if isinstance(raw, bytes):
        return raw
    uri = request.META.get("RAW_URI") or request.META.get("REQUEST_URI")  # WSGI servers
    return _wsgi_bytes(uri.split("?", 1)[0]) if isinstance(uri, str) else None


def _non_utf8_part(request: HttpRequest) -> str | None:
    """``"path"`` or ``"query"`` when its percent-decoded bytes are not UTF-8."""
    path = _raw_path(request)
    if path is not None and not is_utf8(unquote_to_bytes(path)):
        return "path"
    query = _wsgi_bytes(request.META.get("QUERY_STRING", "").replace("+", " "))
    if query is not None and not is_utf8(unquote_to_bytes(query)):
        return "query"
    return None


class ApiProblemMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not is_api_request(request):
            return self.get_response(request)
        part = _non_utf8_part(request)
        if part is not None:
            return _refused(part, INVALID_UTF8, "invalid_utf8")
        part = _unsafe_part(request)
        if part is not None:
            return _refused(part, NUL_OR_SURROGATE, "invalid_characters")
        response = self.get_response(request)
        return self._as_problem(request, response)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_api_request(request):
            return None
        if isinstance(exception, RequestDataTooBig):
            return problem_http_response(
                status_code=413, code="request_too_large", detail=request_too_large_detail()
            )
        if isinstance(exception, SuspiciousOperation):
            return problem_http_response(status_code=400, code="bad_request", detail=str(exception))
        correlation_id = uuid.uuid4().hex
        logger.error(
            "unhandled error on %s %s [correlation_id=%s]",
            request.method,
            request.path,
            correlation_id,
            exc_info=exception,
        )
        return problem_http_response(
            status_code=500,
            code="internal_error",
            detail=INTERNAL_ERROR,
            correlation_id=correlation_id,
        )

    @staticmethod
    def _as_problem(request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if response.status_code < 400:
            return response
        content_type = response.get("Content-Type", "")
        if content_type.startswith((PROBLEM_CONTENT_TYPE, "application/json")):
            return response
        status_code = response.status_code
        problem = problem_http_response(
            status_code=status_code,
            code=_GENERIC_CODE.get(status_code, "error"),
            detail=_GENERIC_DETAIL.get(status_code, "The request failed."),
        )
        for header in ("Allow", "WWW-Authenticate", "Retry-After"):
            if header in response:
                problem[header] = response[header]
        return problem
