"""Company configuration: the spec's ``memory:`` and ``org_memory:`` sections.

Frozen pydantic v2 models with the spec's defaults, bounds and cross-field validators
(pure: no Django import). The kernel holds the root (:class:`CompanyConfig`) and the core
sections, one module each: :mod:`.memory` (storage, options, embedder, chunking, redaction,
retrieval, self-editing, consolidation, request log) and :mod:`.org_memory`; shared building
blocks in :mod:`.fields`. A capability's sections (``memory.procedural`` and its
``evolver``, ``memory.extraction`` / ``conversation`` / ``dream``, ``memory.fine_tune``) are
declared in the app's ``config.py`` and added to the root at start-up through
:mod:`.sections`, so persistence still validates a company's *whole* config on write
(``company_config_set``, the admin form, ``load_company_config``) without importing an app
(docs/decisions/0010-company-config-in-the-kernel.md). Import a section's models from the
module that defines it.

:func:`parse_company_config` is the only entry point; it raises :class:`CompanyConfigError`
whose ``errors`` name each bad field by its dotted path (``memory.retrieval.relevance_weight``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from synthorg.company_config.fields import FROZEN, ConfigFieldError
from synthorg.company_config.memory import CompanyMemoryConfig
from synthorg.company_config.org_memory import OrgMemoryConfig
from synthorg.company_config.sections import config_root_set


class CompanyConfigError(ValueError):
    """The config is invalid; ``errors`` is a list of ``{field, message, code}``."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e['field']}: {e['message']}" for e in errors))


class CompanyConfig(BaseModel):
    """A company's whole configuration: ``memory:`` and ``org_memory:``."""

    model_config = FROZEN

    memory: CompanyMemoryConfig = Field(default_factory=CompanyMemoryConfig)
    org_memory: OrgMemoryConfig = Field(default_factory=OrgMemoryConfig)


config_root_set(CompanyConfig)  # capabilities' sections are placed from here down


def _error_field(error: Mapping[str, Any]) -> str:
    loc = [str(part) for part in error.get("loc", ())]
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, ConfigFieldError):
        loc.append(cause.field)
    return ".".join(loc)


def _error_message(error: Mapping[str, Any]) -> str:
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, ConfigFieldError):
        return cause.message
    message = str(error.get("msg", "invalid"))
    return message.removeprefix("Value error, ")


def _error_code(error: Mapping[str, Any]) -> str:
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, ConfigFieldError) and cause.code:
        return cause.code
    return str(error.get("type", "invalid"))


def parse_company_config(data: Mapping[str, Any] | None) -> CompanyConfig:
    """Validate ``data`` (``None`` or ``{}`` gives every default)."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise CompanyConfigError(
            [{"field": "", "message": "the configuration must be a mapping", "code": "type"}]
        )
    try:
        return CompanyConfig.model_validate(dict(data))
    except ValidationError as exc:
        errors = [
            {
                "field": _error_field(error),
                "message": _error_message(error),
                "code": _error_code(error),
            }
            for error in exc.errors()
        ]
        raise CompanyConfigError(errors) from None
