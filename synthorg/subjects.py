"""End users (*subjects*): the optional id of the person a memory, conversation or execution
report is about (Mem0's ``user_id``).

A subject is an opaque string the calling application chooses (``"user-42"``,
``"crm:8812"``, an e-mail address): 1–128 characters, no control or format characters
(Unicode categories Cc, Cf, Zl, Zp), no ``/`` (it is a path segment of
``/api/v1/subjects/{subject}``) and no leading or trailing whitespace (``" u1"`` and ``"u1"``
would otherwise be two people). Stored as given: case matters. Pure functions, no Django
import beyond the HMAC helper; every interface validates with :func:`subject_problem`.
"""

from __future__ import annotations

import unicodedata

SUBJECT_MAX_CHARS = 128
SUBJECT_INVALID = (
    "subject must be 1–128 characters, without control characters, '/', or leading or "
    "trailing whitespace."
)
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def subject_problem(value: object) -> str | None:
    """Why ``value`` is not a valid subject (``None`` when it is)."""
    if not isinstance(value, str) or not 1 <= len(value) <= SUBJECT_MAX_CHARS:
        return SUBJECT_INVALID
    if value != value.strip() or "/" in value:
        return SUBJECT_INVALID
    if any(unicodedata.category(ch) in _FORBIDDEN_CATEGORIES for ch in value):
        return SUBJECT_INVALID
    return None


def validate_subject(value: str) -> str:
    """``value`` when it is a valid subject; ``ValueError`` otherwise (pydantic validators)."""
    problem = subject_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def require_subject(value: str) -> str:
    """``value`` when it is a valid subject; else 400 ``subject_invalid`` (a path's subject,
    a service's argument)."""
    from synthorg.errors import InvalidInputError

    problem = subject_problem(value)
    if problem is not None:
        raise InvalidInputError(
            problem,
            code="subject_invalid",
            errors=[{"field": "subject", "message": problem, "code": "subject_invalid"}],
        )
    return value


def subject_digest(company_id: int, subject: str) -> str:
    """A keyed digest of ``subject`` within a company: what the (append-only) audit trail
    records of an erased subject instead of its id. Recomputable by the server (to answer
    "was this subject erased?"), meaningless without ``SECRET_KEY``."""
    from django.utils.crypto import salted_hmac

    return salted_hmac(
        "synthorg.subject", f"{company_id}/{subject}", algorithm="sha256"
    ).hexdigest()[:40]
