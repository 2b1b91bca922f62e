"""The exceptions the client raises: one class per family of problem+json ``code``.

Every error the API answers is ``application/problem+json``: ``{"type", "title", "status",
"detail", "code", "errors": [{"field", "message", "code"}]}`` plus members of its own (a 500
carries ``correlation_id``, the id its traceback is logged under on the server). The class
is chosen by the HTTP status, which the API ties to the family of the code; the exact
``code`` is on the exception.
"""

from __future__ import annotations

from typing import Any


class SynthOrgError(Exception):
    """An error answered by the API (or no answer at all: :class:`UnavailableError`)."""

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        code: str = "error",
        errors: list[dict[str, Any]] | None = None,
        correlation_id: str | None = None,
        body: dict[str, Any] | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(f"{status} {code}: {detail}" if status else f"{code}: {detail}")
        #: the HTTP status (``None``: the server could not be reached)
        self.status = status
        #: the stable, machine-readable problem code (``memory_not_found``, …)
        self.code = code
        self.detail = detail
        #: per-field errors: ``[{"field", "message", "code"}]`` (empty when none)
        self.errors = errors or []
        #: the id the server logged the failure under (500s), to quote to the operator
        self.correlation_id = correlation_id
        #: the whole problem body, extra members included
        self.body = body or {}
        #: how many requests were sent (more than 1 after retries)
        self.attempts = attempts


class AuthError(SynthOrgError):
    """401 or 403: the key is missing, wrong or revoked, or the caller may not do this."""


class AuthenticationError(AuthError):
    """401: no key, a malformed key, or a key that is wrong or revoked."""


class PermissionDeniedError(AuthError):
    """403: the caller is known but may not do this (``agents_only``, …)."""


class NotFoundError(SynthOrgError):
    """404: nothing by that id is visible to the caller (or the path does not exist)."""


class ValidationError(SynthOrgError):
    """400, 413 or 422: the request was refused as invalid; ``errors`` names the fields."""


class ConflictError(SynthOrgError):
    """409: the request conflicts with the current state (a superseded memory, a version)."""


class RateLimitedError(SynthOrgError):
    """429: too many requests; ``retry_after`` is the wait the server asked for."""

    def __init__(self, detail: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(detail, **kwargs)
        self.retry_after = retry_after


class UnavailableError(SynthOrgError):
    """502, 503 or 504, or no answer at all (``status`` ``None``, code ``connection_error``)."""

    def __init__(self, detail: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(detail, **kwargs)
        self.retry_after = retry_after


class ServerError(SynthOrgError):
    """500 (or another 5xx): a bug on the server; quote ``correlation_id`` when reporting."""


_BY_STATUS: dict[int, type[SynthOrgError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: ValidationError,
    422: ValidationError,
    429: RateLimitedError,
    502: UnavailableError,
    503: UnavailableError,
    504: UnavailableError,
}


def error_class(status: int) -> type[SynthOrgError]:
    """The exception class of an error answered with ``status``."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 and status != 501 else SynthOrgError
