"""Which embedder a company's vectors come from (memories and org facts alike).

The default is the local all-MiniLM-L6-v2 model; a company's ``memory.embedder`` override
with a ``base_url`` selects an OpenAI-compatible endpoint (its key is read from the
environment variable the config names, never stored in the config). A remote embedder gets
a total time budget per call (``SYNTHORG_EMBEDDER_BUDGET``) well under the web worker's
timeout, and after a transient failure is skipped for ``SYNTHORG_EMBEDDER_COOLDOWN`` seconds:
a hanging endpoint leaves the memory ``pending`` (backfilled later) instead of getting the
worker killed mid-request, and does not hold other companies' requests behind it. Every
stored vector carries the ``embedder_id`` that produced it, and search only compares vectors
of the query's embedder id and width.

Lives in ``persistence`` (next to the config accessor) because both the memory app and the
org-memory app embed with the company's embedder, and org memory may not import memory.
"""

from __future__ import annotations

import functools
import os

from django.conf import settings

from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.company_config import CompanyConfig
from synthorg.company_config.memory import SECRET_ENV_PREFIX, EmbedderOverrideConfig
from synthorg.embedding import Embedder, OpenAICompatibleEmbedder, default_embedder
from synthorg.errors import UnprocessableError
from synthorg.tenancy import SECRET_NOT_GRANTED, secret_granted

SECRET_NOT_ALLOWED = f"The embedder key must come from a {SECRET_ENV_PREFIX}* variable."


def company_embedder(company: Company, config: CompanyConfig | None = None) -> Embedder:
    """The embedder for ``company``'s vectors (process-wide instances, cached). ``config``:
    the company's config when the caller has already read it (read here otherwise)."""
    override = (config or company_config(company)).memory.embedder
    if override is None or override.base_url is None:
        return default_embedder()
    return remote_embedder(override, company.pk)


def company_embedder_key(company: Company) -> tuple[str, int]:
    """``(embedder_id, dims)`` of the company's embedder (no model load, no network)."""
    embedder = company_embedder(company)
    return embedder.embedder_id, embedder.dims


def remote_embedder(override: EmbedderOverrideConfig, company_id: int) -> Embedder:
    """The company's remote embedder. Its key is read only if the operator granted the
    variable to the company (checked on every call: grants change without a config write);
    its connections pass the outbound guard (``SYNTHORG_OUTBOUND_ALLOW``, read per connection)."""
    if override.api_key_env:
        # Parsing refuses other names; checked again here so no path reads a server secret.
        if not override.api_key_env.startswith(SECRET_ENV_PREFIX):
            raise UnprocessableError(SECRET_NOT_ALLOWED, code="secret_not_allowed")
        if not secret_granted(override.api_key_env, company_id):
            raise UnprocessableError(
                SECRET_NOT_GRANTED.format(name=override.api_key_env, company_id=company_id),
                code="secret_not_granted",
            )
    return cached_remote_embedder(override)


@functools.lru_cache(maxsize=64)
def cached_remote_embedder(override: EmbedderOverrideConfig) -> Embedder:
    api_key = os.environ.get(override.api_key_env) if override.api_key_env else None
    return OpenAICompatibleEmbedder(
        base_url=override.base_url,
        model=override.model,
        dims=override.dims,
        api_key=api_key,
        timeout=settings.SYNTHORG_EMBEDDER_TIMEOUT,
        total_timeout=settings.SYNTHORG_EMBEDDER_BUDGET,
        cooldown=settings.SYNTHORG_EMBEDDER_COOLDOWN,
    )
