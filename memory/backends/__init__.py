"""Memory backends behind the seeds' protocols; :func:`create_memory_backend` picks one."""

from __future__ import annotations

from memory.backends.protocol import MemoryBackend, MemoryCapabilities, SharedKnowledgeStore

__all__ = [
    "MemoryBackend",
    "MemoryCapabilities",
    "SharedKnowledgeStore",
    "create_memory_backend",
]


def create_memory_backend(company) -> MemoryBackend:
    """An isolated backend for ``company`` (``memory.backend`` config: pgvector only)."""
    from memory.backends.postgres import PostgresMemoryBackend
    from memory.errors import MemoryConfigError
    from persistence.selectors.config import company_config

    name = company_config(company).memory.backend
    if name != "pgvector":
        raise MemoryConfigError(
            f"memory.backend {name!r} is not available here; use 'pgvector'.",
            code="memory_backend_unsupported",
        )
    return PostgresMemoryBackend(company)
