"""What a company's configuration may name on the server: granted secrets, its own files,
outbound URLs the guard accepts.

A company config is written by the company's admins, so everything in it that reaches the
server's environment is checked against what the *server operator* decided:

* **Secrets**: ``memory.embedder.api_key_env`` names a ``SYNTHORG_SECRET_*`` variable whose
  value is sent as a Bearer token to the company's endpoint. The operator grants each such
  variable to companies by slug (``SYNTHORG_SECRET_GRANTS``); an ungranted name is refused
  when the config is written and again when the key would be read.
* **Paths**: path fields are names relative to the company's directory,
  ``SYNTHORG_TENANT_FILES_DIR/<slug>/``; :func:`tenant_path` resolves one there and refuses
  anything (``..``, a symlink) that lands outside it.
* **URLs**: ``memory.embedder.base_url`` must pass :func:`synthorg.outbound.check_url`.

Settings are read at call time (lazily importing Django), never at import.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from synthorg.outbound import UnsafeURLError, check_url

SECRET_NOT_GRANTED = (
    "{name} is not granted to company {slug!r}: the server operator grants secrets to "
    "companies with SYNTHORG_SECRET_GRANTS"
)
BAD_GRANT = "SYNTHORG_SECRET_GRANTS: {entry!r} is not NAME=slug[|slug…]"
PATH_OUTSIDE = "{path!r} resolves outside the company's directory on the server"
_GRANT_NAME = re.compile(r"^SYNTHORG_SECRET_[A-Z0-9_]+$")
_SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")


class TenantPathError(ValueError):
    """A company-named path that would leave the company's directory."""


def parse_secret_grants(text: str) -> dict[str, frozenset[str]]:
    """``"SYNTHORG_SECRET_A=acme,SYNTHORG_SECRET_B=x|y"`` → ``{name: {slugs}}``."""
    grants: dict[str, set[str]] = {}
    for entry in re.split(r"[,\s]+", text or ""):
        if not entry:
            continue
        name, sep, slugs = entry.partition("=")
        companies = [s for s in slugs.split("|") if s]
        if not sep or not _GRANT_NAME.match(name) or not companies:
            raise ValueError(BAD_GRANT.format(entry=entry))
        if not all(_SLUG.match(s) for s in companies):
            raise ValueError(BAD_GRANT.format(entry=entry))
        grants.setdefault(name, set()).update(companies)
    return {name: frozenset(slugs) for name, slugs in grants.items()}


@functools.lru_cache(maxsize=8)
def _cached_grants(text: str) -> dict[str, frozenset[str]]:
    return parse_secret_grants(text)


def secret_granted(name: str, slug: str) -> bool:
    from django.conf import settings

    grants = _cached_grants(getattr(settings, "SYNTHORG_SECRET_GRANTS", "") or "")
    return slug in grants.get(name, frozenset())


def tenant_files_dir(slug: str) -> Path:
    """The company's directory: ``SYNTHORG_TENANT_FILES_DIR/<slug>`` (resolved)."""
    from django.conf import settings

    if not _SLUG.match(slug):
        raise TenantPathError(f"company slug {slug!r} is not a safe directory name")
    return (Path(settings.SYNTHORG_TENANT_FILES_DIR) / slug).resolve()


def tenant_path(slug: str, relative: str) -> Path:
    """``relative`` (a config path field) inside the company's directory, resolved; a path
    that leaves it (absolute, ``..``, a symlink pointing elsewhere) is a
    :class:`TenantPathError`."""
    base = tenant_files_dir(slug)
    if Path(relative).is_absolute():
        raise TenantPathError(PATH_OUTSIDE.format(path=relative))
    target = (base / relative).resolve()
    if not target.is_relative_to(base):
        raise TenantPathError(PATH_OUTSIDE.format(path=relative))
    return target


def tenant_config_errors(config: Any, *, slug: str) -> list[dict[str, str]]:
    """What in a parsed company config the server refuses for company ``slug`` (each error
    ``{field, message, code}``, like :class:`synthorg.company_config.CompanyConfigError`)."""
    errors = []
    embedder = config.memory.embedder
    if embedder is not None and embedder.base_url is not None:
        try:
            check_url(embedder.base_url)
        except UnsafeURLError as exc:
            errors.append(
                {
                    "field": "memory.embedder.base_url",
                    "message": str(exc),
                    "code": "outbound_url_refused",
                }
            )
    if (
        embedder is not None
        and embedder.api_key_env
        and not secret_granted(embedder.api_key_env, slug)
    ):
        errors.append(
            {
                "field": "memory.embedder.api_key_env",
                "message": SECRET_NOT_GRANTED.format(name=embedder.api_key_env, slug=slug),
                "code": "secret_not_granted",
            }
        )
    return errors
