"""What the memory endpoints share: the agent-only mixin, request parsing, OpenAPI examples."""

from __future__ import annotations

from django.utils.functional import cached_property
from drf_spectacular.utils import (
    OpenApiResponse,
)

from memory.core.domain import MemoryStoreRequest, parse_request
from memory.interfaces.service import MemoryService
from persistence.api.permissions import IsAgent, IsPrincipal

NOT_FOUND = OpenApiResponse(description="problem+json: no such memory visible to the caller")

MEMORY_EXAMPLE = {
    "id": "3f1c2a9e-8a51-4c8e-9a77-2b0f6f0d4f10",
    "agent_id": 7,
    "namespace": "default",
    "category": "semantic",
    "content": "The billing service deploys every Friday at noon UTC.",
    "context": "",
    "source": "task-481",
    "confidence": 0.9,
    "tags": ["deploy", "billing"],
    "is_shared": False,
    "level": "persistent",
    "session_id": None,
    "project_id": None,
    "task_id": None,
    "created_at": "2026-11-20T12:00:00Z",
    "updated_at": "2026-11-20T12:00:00Z",
    "expires_at": None,
    "superseded_at": None,
    "superseded_by": None,
    "embedding_status": "ready",
    "embedder_id": "minilm-l6-v2-int8",
    "scope": "",
    "application_count": 0,
    "last_applied_at": None,
    "procedural": None,
}
STORE_EXAMPLE = {
    "content": "The billing service deploys every Friday at noon UTC.",
    "category": "semantic",
    "tags": ["deploy", "billing"],
    "source": "task-481",
    "confidence": 0.9,
}
STORED = {
    "id": "3f1c2a9e-8a51-4c8e-9a77-2b0f6f0d4f10",
    "stored": True,
    "deduplicated": False,
    "embedding_status": "ready",
}


class AgentView:
    """Mixin: only agents (API key) call these endpoints; viewers cannot write."""

    permission_classes = [IsPrincipal, IsAgent]

    @property
    def agent(self):
        return self.request.user.agent

    @cached_property
    def service(self) -> MemoryService:
        """The one entry point to memory, as the calling agent (one per request: the
        company config and the strategy are read once)."""
        return MemoryService(self.request.user)


def store_request_from(data, *, service: MemoryService, prefix: str = "") -> MemoryStoreRequest:
    """The store request of validated body ``data``; a tuple namespace is rendered by the
    service (the company's templates)."""
    clean = {key: value for key, value in data.items() if value is not None}
    if "namespace" in clean:
        field = f"{prefix}.namespace" if prefix else "namespace"
        clean["namespace"] = service.namespace(clean["namespace"], field=field)
    return parse_request(MemoryStoreRequest, clean, prefix=prefix)


def prefixed_errors(error, prefix: str):
    """Service errors name batch items ``[i].field``; the API says ``memories[i].field``."""
    error.errors = [
        {**e, "field": f"{prefix}{e['field']}" if e.get("field") else e.get("field")}
        for e in error.errors
    ]
    if error.errors and error.errors[0]["field"]:
        error.detail = f"{error.errors[0]['field']}: {error.detail}"
    return error
