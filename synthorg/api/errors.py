"""One DRF exception handler: every error becomes ``application/problem+json``.

Shape: ``{"type", "title", "status", "detail", "code", "errors": [{"field", "message",
"code"}]}`` plus any extra members a domain error carries.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

from synthorg.errors import DomainError

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"
PROBLEM_TYPE_BASE = "https://synthorg.dev/problems/"

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


def problem_response(
    *,
    status_code: int,
    code: str,
    title: str,
    detail: str,
    errors: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE_BASE + code,
        "title": title,
        "status": status_code,
        "detail": detail,
        "code": code,
        "errors": errors or [],
    }
    if extra:
        body.update(extra)
    response = Response(
        body, status=status_code, headers=headers, content_type=PROBLEM_CONTENT_TYPE
    )
    # Also set the header now: callers (and tests) may inspect the response before rendering.
    response["Content-Type"] = PROBLEM_CONTENT_TYPE
    return response


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


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        return problem_response(
            status_code=exc.status,
            code=exc.code,
            title=exc.title,
            detail=exc.detail,
            errors=[dict(e) for e in exc.errors],
            extra=exc.extra,
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
        return None  # a genuine bug: let Django log it and answer 500

    headers: dict[str, str] = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))
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
    return problem_response(
        status_code=exc.status_code,
        code=code,
        title=str(exc.default_detail).rstrip("."),
        detail=str(detail),
        headers=headers,
    )
