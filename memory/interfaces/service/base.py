"""What every part of :class:`~memory.interfaces.service.MemoryService` shares: the acting
agent, the company's config read once, namespaces, replica reads, the advisory warnings of a
write, the request log, and the typed routing of framework errors."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError

from memory.core.domain import StoreResult
from memory.core.errors import MemoryInputError, MemoryNotFoundError
from memory.core.retrieval.filtering import tag_missing_warnings
from memory.core.services.request_log import request_log_entry, request_log_write
from persistence.selectors.config import company_config
from synthorg.after_response import after_response
from synthorg.company_config import CompanyConfig
from synthorg.company_config.memory import CompanyMemoryConfig
from synthorg.company_config.namespaces import NamespaceError, render_namespace
from synthorg.db.replicas import read_with_fallback
from synthorg.errors import AccessDeniedError
from synthorg.tools import Confirmation

AGENTS_ONLY = "Only agents (API key) have memories; this endpoint needs an agent's key."
NOT_FOUND = "No such memory."

T = TypeVar("T")


def routed(method):
    """Translate framework errors into the domain error tree (typed error routing)."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except ObjectDoesNotExist as exc:
            raise MemoryNotFoundError(NOT_FOUND, code="memory_not_found") from exc
        except DjangoValidationError as exc:
            message = "; ".join(exc.messages) or "invalid input"
            raise MemoryInputError(message, code="validation_error") from exc

    return wrapper


def guard(confirmation: Confirmation | None) -> dict[str, str]:
    """The audited ``reason`` and ``via`` of a destructive call confirmed as a tool."""
    if confirmation is None:
        return {}
    return {"reason": confirmation.reason, "via": confirmation.via}


class ServiceBase:
    """Agent memory operations as ``principal`` (an agent's :class:`Principal`)."""

    def __init__(self, principal, *, via: str = "rest") -> None:
        agent = getattr(principal, "agent", None)
        if agent is None:
            raise AccessDeniedError(AGENTS_ONLY, code="agents_only")
        self.principal = principal
        self.agent = agent
        self.company = agent.company
        #: the interface the calls come through (``rest``, ``mcp``, ``stdio``), as logged
        self.via = via

    @functools.cached_property
    def full_config(self) -> CompanyConfig:
        """The company's parsed config, read once per service (one per request) and handed
        down: nothing below a search or context call reads it again."""
        return company_config(self.company)

    @property
    def config(self) -> CompanyMemoryConfig:
        """The company's memory config (of :attr:`full_config`)."""
        return self.full_config.memory

    def namespace(self, value: str | Sequence[str], *, field: str = "namespace") -> str:
        """The flat namespace of ``value``: a string as it is, a tuple rendered through the
        company's ``memory.namespace_templates`` with ``{company}`` / ``{agent}`` bound to
        the caller (400 with the template's code, naming ``field``)."""
        try:
            return render_namespace(
                value,
                templates=self.config.namespace_templates,
                bound={"company": self.company.slug, "agent": self.agent.name},
            )
        except NamespaceError as exc:
            raise MemoryInputError(
                f"{field}: {exc.message}",
                code=exc.code,
                errors=[{"field": field, "message": exc.message, "code": exc.code}],
            ) from None

    def namespaces(
        self, values: Sequence[str | Sequence[str]], *, field: str = "namespaces"
    ) -> tuple[str, ...]:
        return tuple(
            self.namespace(value, field=f"{field}[{index}]") for index, value in enumerate(values)
        )

    def replica_read(self, read: Callable[[], T]) -> T:
        """Run ``read`` (reads only) on a streaming replica when one may serve this agent.

        Search, context and lists go through here (``synthorg.db.replicas``): on the primary
        without replicas, inside a transaction, or while the agent's last write is not yet
        replayed on any healthy replica; a replica failing mid-read is retried on the primary.
        """
        return read_with_fallback(self.principal.pk, read)

    def _advised(self, result: StoreResult, tags: Sequence[str]) -> StoreResult:
        """``result`` with the advisory warnings of its write (D23: a memory stored without
        the ``non-inferable`` tag while ``non_inferable_only`` is on is stored, and told so)."""
        if not result.stored:
            return result
        warnings = tag_missing_warnings(
            required=self.config.retrieval.non_inferable_only, tags=tags
        )
        if not warnings:
            return result
        return result.model_copy(update={"warnings": (*result.warnings, *warnings)})

    def _log(
        self,
        kind: str,
        text: str,
        started: float,
        count: int,
        degraded,
        subject: str | None = None,
    ) -> None:
        entry = request_log_entry(
            agent=self.agent,
            config=self.config.request_log,
            kind=kind,
            via=self.via,
            query=text,
            result_count=count,
            latency_ms=(time.perf_counter() - started) * 1000,
            degraded=degraded,
            subject=subject,
        )
        if entry is not None:
            # bookkeeping: written after the response is sent (now outside a request), and
            # never holding the agent's next reads to the primary
            after_response(request_log_write, entry)
