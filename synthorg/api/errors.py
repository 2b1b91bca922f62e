"""One DRF exception handler: every error becomes ``application/problem+json``.

Shape: ``{"type", "title", "status", "detail", "code", "errors": [{"field", "message",
"code"}]}`` plus any extra members a domain error carries (extras never replace the
standard members). Errors raised outside DRF views (unknown URLs, oversized bodies, bugs)
are answered in the same shape by :mod:`synthorg.api.middleware`.
"""

from __future__ import annotations

import json
import logging
from http import HTTPStatus
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

from synthorg.errors import DomainError

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"
PROBLEM_TYPE_BASE = "https://synthorg.dev/problems/"
STANDARD_MEMBERS = frozenset({"type", "title", "status", "detail", "code", "errors"})

REQUEST_TOO_LARGE = "The request body is larger than the server accepts ({limit} bytes)."

_DRF_CODES = {
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "throttled",
    exceptions.ParseError: "malformed_request",
    exceptions.ValidationError: "validation_error",
}


def status_title(status_code: int) -> str:
    """A fixed, human title per status ("Method not allowed"), never a message template."""
    try:
        phrase = HTTPStatus(status_code).phrase
    except ValueError:
        return "Error"
    return phrase[:1] + phrase[1:].lower()


def problem_body(
    *,
    status_code: int,
    code: str,
    title: str | None = None,
    detail: str,
    errors: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        key: value for key, value in (extra or {}).items() if key not in STANDARD_MEMBERS
    }
    body.update(
        {
            "type": PROBLEM_TYPE_BASE + code,
            "title": title or status_title(status_code),
            "status": status_code,
            "detail": detail,
            "code": code,
            "errors": errors or [],
        }
    )
    return body


def problem_response(*, headers: dict[str, str] | None = None, **members: Any) -> Response:
    """A DRF response carrying :func:`problem_body` (``members`` are its arguments)."""
    body = problem_body(**members)
    response = Response(
        body, status=body["status"], headers=headers, content_type=PROBLEM_CONTENT_TYPE
    )
    # Also set the header now: callers (and tests) may inspect the response before rendering.
    response["Content-Type"] = PROBLEM_CONTENT_TYPE
    return response


def problem_http_response(
    *, status_code: int, code: str, detail: str, **members: Any
) -> HttpResponse:
    """The same problem as a plain Django response, for code that runs outside DRF views."""
    errors = members.pop("errors", None)
    body = problem_body(
        status_code=status_code, code=code, detail=detail, errors=errors, extra=members
    )
    return HttpResponse(json.dumps(body), status=status_code, content_type=PROBLEM_CONTENT_TYPE)


def flatten_field_errors(detail: Any, prefix: str = "") -> list[dict[str, Any]]:
    """Turn DRF's nested error detail into a flat list of ``{field, message, code}``."""
    out: list[dict[str, Any]] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = "" if key == "non_field_errors" else str(key)
            field = f"{prefix}.{name}" if prefix and name else (prefix or name)
            out.extend(flatten_field_errors(value, field))
    elif isinstance(detail, list):
        if all(isinstance(item, (str, exceptions.ErrorDetail)) for item in detail):
            for item in detail:
                out.extend(flatten_field_errors(item, prefix))
        else:
            for index, item in enumerate(detail):
                field = f"{prefix}[{index}]" if prefix else f"[{index}]"
                out.extend(flatten_field_errors(item, field))
    else:
        code = getattr(detail, "code", "invalid")
        out.append({"field": prefix or None, "message": str(detail), "code": code})
    return out


def _validation_summary(errors: list[dict[str, Any]]) -> str:
    if not errors:
        return "The request is invalid."
    first = errors[0]
    where = f"{first['field']}: " if first.get("field") else ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}{first['message']}{more}"


def request_too_large_detail() -> str:
    from django.conf import settings

    return REQUEST_TOO_LARGE.format(limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        retry_after = getattr(exc, "retry_after", None)
        return problem_response(
            status_code=exc.status,
            code=exc.code,
            title=exc.title,
            detail=exc.detail,
            errors=[dict(e) for e in exc.errors],
            extra=exc.extra,
            headers={"Retry-After": str(retry_after)} if retry_after else None,
        )
    if isinstance(exc, RequestDataTooBig):
        return problem_response(
            status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            code="request_too_large",
            detail=request_too_large_detail(),
        )
    if isinstance(exc, SuspiciousOperation):
        return problem_response(
            status_code=status.HTTP_400_BAD_REQUEST, code="bad_request", detail=str(exc)
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        )
    if not isinstance(exc, exceptions.APIException):
        # A genuine bug: the API middleware logs it and answers a 500 problem with a
        # correlation id.
        return None

    headers: dict[str, str] = {}
    if auth_header := getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = auth_header
    if wait := getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(wait))
    code = next((c for cls, c in _DRF_CODES.items() if type(exc) is cls), None)
    if isinstance(exc, exceptions.ValidationError):
        errors = flatten_field_errors(exc.detail)
        return problem_response(
            status_code=status.HTTP_400_BAD_REQUEST,
            code="validation_error",
            title="Invalid input",
            detail=_validation_summary(errors),
            errors=errors,
            headers=headers,
        )
    if code is None:
        code = exc.default_code if isinstance(exc.default_code, str) else "error"
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if isinstance(exc.detail, exceptions.ErrorDetail) and exc.detail.code not in (
        None,
        exc.default_code,
    ):
        code = str(exc.detail.code)
    field_errors: list[dict[str, Any]] | None = None
    if getattr(exc, "field", None) is not None or code in {
        "json_too_deep",
        "invalid_characters",
        "number_out_of_range",
    }:
        field_errors = [
            {"field": getattr(exc, "field", None), "message": str(detail), "code": code}
        ]
    return problem_response(
        status_code=exc.status_code,
        code=code,
        detail=str(detail),
        errors=field_errors,
        headers=headers,
    )
