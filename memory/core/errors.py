"""The memory error family (the seeds' hierarchy) mapped onto :mod:`synthorg.errors`.

Callers can catch every memory failure with ``except MemoryError`` (this deliberately
shadows the built-in, as in the seeds; import it explicitly), while the API's one exception
handler turns each into problem+json through the HTTP status of the domain error it also is.
Pure module: no Django import.
"""

from __future__ import annotations

from synthorg.errors import (
    AccessDeniedError,
    ConflictError,
    DomainError,
    InvalidInputError,
    NotFoundError,
    NotSupportedError,
    ServiceUnavailableError,
    UnprocessableError,
)


class MemoryError(DomainError):  # the seeds' name (shadows the built-in)
    """Base of every memory error; the concrete status comes from the second base."""


class MemoryConnectionError(MemoryError, ServiceUnavailableError):
    code = "memory_unavailable"


class MemoryInputError(MemoryError, InvalidInputError):
    """A memory request (store, update, search ...) is malformed."""

    code = "validation_error"


class MemoryStoreError(MemoryInputError):
    """A store, update or delete was refused (bad level binding, bad reference ...)."""

    code = "memory_store_invalid"


class MemoryStoreConflictError(MemoryStoreError, ConflictError):
    """A store or change that conflicts with the current state (closed project ...)."""

    status = ConflictError.status
    title = ConflictError.title
    code = "memory_conflict"


class MemoryRetrievalError(MemoryError, ServiceUnavailableError):
    code = "memory_retrieval_failed"


class MemoryNotFoundError(MemoryError, NotFoundError):
    code = "memory_not_found"


class MemoryConfigError(MemoryError, UnprocessableError):
    code = "memory_config_invalid"


class MemoryCapabilityError(MemoryError, NotSupportedError):
    code = "memory_capability_unsupported"


class SharedKnowledgeDisabledError(MemoryError, AccessDeniedError):
    """The company turned shared knowledge off (``memory.options.shared_knowledge_base``):
    no shared entry is published, read or retracted through the agent-facing paths."""

    code = "shared_knowledge_disabled"


class MemoryAccessError(MemoryError, AccessDeniedError):
    """The caller may see the memory but not change it (e.g. retracting another's)."""

    code = "memory_access_denied"
