"""The domain error hierarchy (pure: no Django import).

Every error a service raises for a caller mistake or a rule derives from
:class:`DomainError`; the API exception handler maps ``status`` and ``code`` to an
``application/problem+json`` response. ``code`` is a stable machine-readable string
clients can branch on; ``detail`` is for humans.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class DomainError(Exception):
    status: int = 400
    code: str = "domain_error"
    title: str = "Request could not be processed"

    def __init__(
        self,
        detail: str,
        *,
        code: str | None = None,
        errors: Sequence[Mapping[str, Any]] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        if code is not None:
            self.code = code
        self.errors = list(errors)
        self.extra = dict(extra or {})


class InvalidInputError(DomainError):
    status = 400
    code = "invalid_input"
    title = "Invalid input"


def invalid_input_from(exc: Any, message: str, *, code: str) -> InvalidInputError:
    """A 400 ``code`` from a pydantic ``ValidationError``: every field error in ``errors``
    (``field`` dotted, ``message``, ``code``), the first in ``message`` (its ``{error}``)."""
    errors = [
        {
            "field": ".".join(str(p) for p in e["loc"]) or None,
            "message": e["msg"],
            "code": e["type"],
        }
        for e in exc.errors()
    ]
    first = f"{errors[0]['field']}: {errors[0]['message']}"
    return InvalidInputError(message.format(error=first), code=code, errors=errors)


class AccessDeniedError(DomainError):
    status = 403
    code = "access_denied"
    title = "Access denied"


class NotFoundError(DomainError):
    status = 404
    code = "not_found"
    title = "Not found"


class ConflictError(DomainError):
    status = 409
    code = "conflict"
    title = "Conflict"


class UnprocessableError(DomainError):
    status = 422
    code = "unprocessable"
    title = "Unprocessable request"


class RateLimitedError(DomainError):
    """Too many requests: ``retry_after`` is the whole seconds after which the same request
    is accepted again (the ``Retry-After`` header and the problem's ``retry_after``)."""

    status = 429
    code = "rate_limited"
    title = "Too many requests"

    def __init__(self, detail: str, *, retry_after: int, code: str | None = None) -> None:
        self.retry_after = max(1, int(retry_after))
        super().__init__(detail, code=code, extra={"retry_after": self.retry_after})


class NotSupportedError(DomainError):
    status = 501
    code = "not_supported"
    title = "Operation not supported"


class ServiceUnavailableError(DomainError):
    status = 503
    code = "service_unavailable"
    title = "Service unavailable"
