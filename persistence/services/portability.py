"""Data portability: export a company's or one agent's content as JSON Lines, import it back.

What is exported is whatever the apps registered in :mod:`persistence.content_registry`
(memories, shared knowledge, the archive, and conversation data once that app registers
it). The file starts with a header line::

    {"type": "synthorg_export", "version": 1, "company": "acme", "agent": "scout" | null,
     "exported_at": "...", "kinds": ["memory", "shared_knowledge", "archived_memory"]}

followed by one line per row: ``{"type": <kind name>, "id": ..., "agent": <agent name>, ...}``.
Both directions are audited (who, which company/agent, counts — never content).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence

from django.db import DataError, IntegrityError, transaction
from django.utils import timezone

from persistence.access import CREATE, require_write
from persistence.audit_actions import AuditAction
from persistence.content_registry import ImportContext, ImportCounts, content_kind, content_kinds
from persistence.models import Agent, Company
from persistence.selectors.config import company_config
from persistence.services.agents import agent_create
from persistence.services.audit import audit_record
from synthorg.company_config.namespaces import NamespaceError, render_namespace
from synthorg.errors import InvalidInputError
from synthorg.subjects import subject_digest, subject_problem

EXPORT_FORMAT = "synthorg_export"
EXPORT_VERSION = 1
NOT_AN_EXPORT = "Line 1 must be a synthorg_export header of version 1."
BAD_LINE = "Line {line}: {problem}."
AGENT_OTHER_COMPANY = "The agent does not belong to this company."
ROW_REFUSED = "A row could not be stored; nothing was imported: {error}"


def export_namespaces(
    *, company: Company, agent: Agent | None, values: Sequence[str | Sequence[str]]
) -> tuple[str, ...]:
    """The flat namespaces an export filter names: flat strings as they are, tuples rendered
    through the company's ``memory.namespace_templates`` (``{company}`` bound to the
    company, ``{agent}`` to the agent filtered by, if any); 400 with the template's code."""
    templates = company_config(company).memory.namespace_templates
    bound = {"company": company.slug, **({"agent": agent.name} if agent is not None else {})}
    names: list[str] = []
    for index, value in enumerate(values):
        try:
            names.append(render_namespace(value, templates=templates, bound=bound))
        except NamespaceError as exc:
            field = f"namespace[{index}]"
            raise InvalidInputError(
                f"{field}: {exc.message}",
                code=exc.code,
                errors=[{"field": field, "message": exc.message, "code": exc.code}],
            ) from None
    return tuple(dict.fromkeys(names))


def content_export(
    *,
    company: Company,
    agent: Agent | None = None,
    principal=None,
    via: str = "",
    namespaces: Sequence[str | Sequence[str]] = (),
    subject: str | None = None,
) -> Iterator[str]:
    """Audit the export, then return an iterator of JSON lines (rows are read lazily).

    ``namespaces`` (flat or tuple, see :func:`export_namespaces`): only the namespaced kinds
    (memories, shared knowledge, the archive), only rows in those namespaces. ``subject``:
    only the kinds that carry an end user, only rows about that one (the audit entry keeps
    a keyed digest of it, never the subject)."""
    if principal is not None:
        require_write(principal, "export", CREATE)
    if agent is not None and agent.company_id != company.pk:
        raise InvalidInputError(AGENT_OTHER_COMPANY, code="agent_other_company")
    names = export_namespaces(company=company, agent=agent, values=namespaces)
    kinds = content_kinds()
    if names:
        kinds = [kind for kind in kinds if kind.namespaced]
    if subject is not None:
        problem = subject_problem(subject)
        if problem is not None:
            raise InvalidInputError(problem, code="subject_invalid")
        kinds = [kind for kind in kinds if kind.subjected]
    with transaction.atomic():
        audit_record(
            company=company,
            principal=principal,
            action_type=AuditAction.CONTENT_EXPORTED,
            target_type="agent" if agent is not None else "company",
            target_id=agent.pk if agent is not None else company.pk,
            risk_level="medium",
            details={
                "kinds": [k.name for k in kinds],
                "via": via,
                **({"namespaces": list(names)} if names else {}),
                **(
                    {"subject_digest": subject_digest(company.pk, subject)}
                    if subject is not None
                    else {}
                ),
            },
        )
    return _lines(company, agent, kinds, names, subject)


def _lines(
    company: Company, agent: Agent | None, kinds, names=(), subject: str | None = None
) -> Iterator[str]:
    header = {
        "type": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "company": company.slug,
        "agent": agent.name if agent is not None else None,
        "exported_at": timezone.now().isoformat(),
        "kinds": [k.name for k in kinds],
    }
    if names:
        header["namespaces"] = list(names)
    if subject is not None:
        header["subject"] = subject
    yield json.dumps(header) + "\n"
    for kind in kinds:
        args = (names,) if names else ()
        extra = {"subject": subject} if subject is not None else {}
        rows = kind.export(company, agent, *args, **extra)
        for row in rows:
            yield json.dumps({"type": kind.name, **row}, ensure_ascii=False) + "\n"


def _storable(value) -> bool:
    """PostgreSQL text holds neither NUL nor unpaired surrogates (JSON can spell both)."""
    if isinstance(value, str):
        if "\x00" in value:
            return False
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_storable(k) and _storable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_storable(item) for item in value)
    return True


def _parse(lines: Iterable[str | bytes]) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = defaultdict(list)
    header = None
    for number, line in enumerate(lines, start=1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                problem = "not UTF-8"
                raise InvalidInputError(
                    BAD_LINE.format(line=number, problem=problem), code="invalid_export"
                ) from exc
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise InvalidInputError(
                BAD_LINE.format(line=number, problem="not JSON"), code="invalid_export"
            ) from exc
        if not isinstance(record, dict):
            raise InvalidInputError(
                BAD_LINE.format(line=number, problem="not a JSON object"), code="invalid_export"
            )
        try:
            storable = _storable(record)
        except RecursionError:
            storable = False
        if not storable:
            problem = "contains NUL, an unpaired surrogate or too deep nesting"
            raise InvalidInputError(
                BAD_LINE.format(line=number, problem=problem), code="invalid_export"
            )
        if header is None:
            if record.get("type") != EXPORT_FORMAT or record.get("version") != EXPORT_VERSION:
                raise InvalidInputError(NOT_AN_EXPORT, code="invalid_export")
            header = record
            continue
        kind = content_kind(str(record.get("type")))
        if kind is None:
            problem = f"unknown row type {record.get('type')!r}"
            raise InvalidInputError(
                BAD_LINE.format(line=number, problem=problem), code="invalid_export"
            )
        rows[kind.name].append(record)
    if header is None:
        raise InvalidInputError(NOT_AN_EXPORT, code="invalid_export")
    return rows


def content_import(
    *,
    company: Company,
    lines: Iterable[str | bytes],
    principal=None,
    create_agents: bool = True,
    via: str = "",
) -> dict[str, ImportCounts]:
    """Import an export into ``company`` in one transaction (all or nothing), idempotently.

    Agents are matched by name (created when missing, with ``create_agents``). Returns the
    counts per kind. A row the database refuses (a rule the row checks above missed) fails
    the whole import with ``invalid_export`` instead of a server error.
    """
    try:
        return _import(
            company=company,
            lines=lines,
            principal=principal,
            create_agents=create_agents,
            via=via,
        )
    except (DataError, IntegrityError) as exc:
        error = str(exc).split("\n", 1)[0][:300]  # the constraint, not the failing row's text
        raise InvalidInputError(ROW_REFUSED.format(error=error), code="invalid_export") from exc


@transaction.atomic
def _import(*, company, lines, principal, create_agents, via) -> dict[str, ImportCounts]:
    if principal is not None:
        require_write(principal, "export", CREATE)
    rows = _parse(lines)
    ctx = ImportContext(
        company=company, agents={}, create_agent=agent_create if create_agents else None
    )
    results: dict[str, ImportCounts] = {}
    for kind in content_kinds():
        if kind.name not in rows:
            continue
        if kind.import_rows is None:  # exported for the record, not restorable
            results[kind.name] = ImportCounts(skipped=len(rows[kind.name]))
        else:
            results[kind.name] = kind.import_rows(company, rows[kind.name], ctx)
    audit_record(
        company=company,
        principal=principal,
        action_type=AuditAction.CONTENT_IMPORTED,
        target_type="company",
        target_id=company.pk,
        risk_level="medium",
        details={"counts": {k: vars(v) for k, v in results.items()}, "via": via},
    )
    return results
