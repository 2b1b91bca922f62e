"""What a company's configuration may name on the server: granted secrets, its own files,
outbound URLs the guard accepts.

A company config is written by the company's admins, so everything in it that reaches the
server's environment is checked against what the *server operator* decided:

* **Secrets**: ``memory.embedder.api_key_env`` names a ``SYNTHORG_SECRET_*`` variable whose
  value is sent as a Bearer token to the company's endpoint. The operator grants each such
  variable to companies by company id (``SYNTHORG_SECRET_GRANTS``); an ungranted name is
  refused when the config is written and again when the key would be read.
* **Paths**: path fields are names relative to the company's directory,
  ``SYNTHORG_TENANT_FILES_DIR/<company id>/``; :func:`tenant_path` resolves one there and
  refuses anything (``..``, a symlink) that lands outside it.

Both are keyed by the company's id, never its slug: a slug can be renamed and the freed slug
taken by another company, which would then inherit the first one's files and secrets.
:func:`move_slug_directories` moves the directories of the older layout (``<slug>/``).
* **URLs**: ``memory.embedder.base_url`` must pass :func:`synthorg.outbound.check_url`.

Settings are read at call time (lazily importing Django), never at import.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from synthorg.outbound import UnsafeURLError, check_url

SECRET_NOT_GRANTED = (
    "{name} is not granted to company {company_id}: the server operator grants secrets to "
    "companies (by id) with SYNTHORG_SECRET_GRANTS"
)
BAD_GRANT = (
    "SYNTHORG_SECRET_GRANTS: {entry!r} is not NAME=company-id[|company-id…] (company ids, "
    "not slugs: a slug can be renamed and then taken by another company)"
)
PATH_OUTSIDE = "{path!r} resolves outside the company's directory on the server"
_GRANT_NAME = re.compile(r"^SYNTHORG_SECRET_[A-Z0-9_]+$")
_SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")
_COMPANY_ID = re.compile(r"^[1-9][0-9]{0,18}$")
#: written into SYNTHORG_TENANT_FILES_DIR once its directories are named by company id
LAYOUT_MARKER = ".layout-company-id"


class TenantPathError(ValueError):
    """A company-named path that would leave the company's directory."""


def parse_secret_grants(text: str) -> dict[str, frozenset[int]]:
    """``"SYNTHORG_SECRET_A=3,SYNTHORG_SECRET_B=3|7"`` → ``{name: {company ids}}``."""
    grants: dict[str, set[int]] = {}
    for entry in re.split(r"[,\s]+", text or ""):
        if not entry:
            continue
        name, sep, ids = entry.partition("=")
        companies = [s for s in ids.split("|") if s]
        if not sep or not _GRANT_NAME.match(name) or not companies:
            raise ValueError(BAD_GRANT.format(entry=entry))
        if not all(_COMPANY_ID.match(s) for s in companies):
            raise ValueError(BAD_GRANT.format(entry=entry))
        grants.setdefault(name, set()).update(int(s) for s in companies)
    return {name: frozenset(ids) for name, ids in grants.items()}


@functools.lru_cache(maxsize=8)
def _cached_grants(text: str) -> dict[str, frozenset[int]]:
    return parse_secret_grants(text)


def _company_id(company_id: int) -> int:
    # A slug here is the bug this module exists to prevent: refuse it loudly.
    if isinstance(company_id, bool) or not isinstance(company_id, int) or company_id < 1:
        raise TypeError(f"a company id is a positive int, not {company_id!r}")
    return company_id


def secret_granted(name: str, company_id: int) -> bool:
    from django.conf import settings

    grants = _cached_grants(getattr(settings, "SYNTHORG_SECRET_GRANTS", "") or "")
    return _company_id(company_id) in grants.get(name, frozenset())


def tenant_files_dir(company_id: int) -> Path:
    """The company's directory: ``SYNTHORG_TENANT_FILES_DIR/<company id>`` (resolved)."""
    from django.conf import settings

    return (Path(settings.SYNTHORG_TENANT_FILES_DIR) / str(_company_id(company_id))).resolve()


def tenant_path(company_id: int, relative: str) -> Path:
    """``relative`` (a config path field) inside the company's directory, resolved; a path
    that leaves it (absolute, ``..``, a symlink pointing elsewhere) is a
    :class:`TenantPathError`."""
    base = tenant_files_dir(company_id)
    if Path(relative).is_absolute():
        raise TenantPathError(PATH_OUTSIDE.format(path=relative))
    target = (base / relative).resolve()
    if not target.is_relative_to(base):
        raise TenantPathError(PATH_OUTSIDE.format(path=relative))
    return target


def tenant_config_errors(config: Any, *, company_id: int) -> list[dict[str, str]]:
    """What in a parsed company config the server refuses for company ``company_id`` (each error
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
        and not secret_granted(embedder.api_key_env, company_id)
    ):
        errors.append(
            {
                "field": "memory.embedder.api_key_env",
                "message": SECRET_NOT_GRANTED.format(
                    name=embedder.api_key_env, company_id=company_id
                ),
                "code": "secret_not_granted",
            }
        )
    return errors


def move_slug_directories(base: Path, companies: Iterable[tuple[int, str]]) -> list[str]:
    """Rename the directories of the older layout, ``base/<slug>/``, to ``base/<id>/``.

    ``companies`` are ``(id, slug)`` pairs. Runs once: afterwards :data:`LAYOUT_MARKER` is
    in ``base`` and a second call moves nothing (a slug that looks like an id, ``"7"``,
    must not be moved again). Every directory goes first to a hidden name, then to its id,
    so a slug equal to another company's id cannot collide. One whose ``<id>/`` exists
    anyway (a directory nobody's slug named) stays at ``.moving-<id>/`` for the operator.
    Returns what was done, one line each.
    """
    companies = list(companies)
    # No company, nothing to move, and no marker: a fresh database (a test run's) sharing
    # this directory must not stop the real database's migration from moving its companies'.
    if not companies or not base.is_dir() or (base / LAYOUT_MARKER).exists():
        return []
    staged: list[tuple[Path, Path, str]] = []
    for company_id, slug in companies:
        source = base / slug
        if slug == str(company_id) or not _SLUG.match(slug) or not source.is_dir():
            continue
        hidden = base / f".moving-{company_id}"
        source.rename(hidden)
        staged.append((hidden, base / str(company_id), slug))
    done: list[str] = []
    for hidden, target, slug in staged:
        if target.exists():
            done.append(f"left {slug}/ at {hidden.name}/: {target.name}/ already exists")
            continue
        hidden.rename(target)
        done.append(f"moved {slug}/ to {target.name}/")
    (base / LAYOUT_MARKER).write_text(
        "Company directories here are named by company id (not slug).\n", encoding="utf-8"
    )
    return done
