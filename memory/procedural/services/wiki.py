"""The wiki export (seed 003 ``WikiExportConfig``): the company's experiences as files.

Under ``export_root`` (inside ``SYNTHORG_TENANT_FILES_DIR/<company id>/``, never elsewhere):

* ``raw/<report id>.md`` — Tier 1: each execution report and its capture's lesson
  (:func:`memory.procedural.compression.raw_trace`), newest first;
* ``wiki/<experience id>.md`` — Tier 2: each compressed experience, linking its raw trace;
* ``index.md`` — what was exported, when, and a link to every page.

``include_raw_tier`` / ``include_compressed_tier`` leave a view out (its directory is not
written); ``max_entries_per_view`` caps each view (None: 1000).

One export per company at a time (a session-level advisory lock; a second one answers
409 ``wiki_export_running``). The export is built in a sibling directory and swapped in by
renames, so a reader never sees half an export; a failed swap puts the previous export
back, and staging directories a crash left behind are removed by the next export. It only
ever replaces what it wrote: ``export_root`` may not overlap another path the company
names (SKILL.md files, fine-tune checkpoints and data: 422 ``wiki_export_root``), and a
root holding anything but an earlier export's files is refused (409
``wiki_export_root_not_ours``) instead of deleted. Triggered after the company's scheduled
consolidation (``trigger: on_consolidation``, registered with
:func:`memory.core.extensions.on_company_maintained`) or by REST; downloadable as a zip
(:func:`wiki_archive`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import shutil
import uuid
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.db import connection, transaction
from django.utils import timezone

from memory.procedural.compression import raw_trace
from memory.procedural.models import CompressedExperience, ExecutionReport
from memory.procedural.services.compression import REPORT_FIELDS, author_lessons
from persistence.audit_actions import AuditAction
from persistence.models import Company
from persistence.selectors.config import company_config
from persistence.services.audit import audit_record
from synthorg.errors import ConflictError, NotFoundError, UnprocessableError
from synthorg.tenancy import TenantPathError, tenant_path

logger = logging.getLogger("memory.procedural")

MAX_VIEW = 1000
WIKI_DISABLED = "The wiki export is disabled for this company (memory.consolidation.wiki_export)."
NO_EXPORT = "This company has no wiki export yet; run one first."
BAD_ROOT = "export_root does not resolve inside the company's directory: {error}"
ROOT_OVERLAPS = "export_root overlaps memory.{field} ({value!r}): the export replaces its directory"
EXPORT_RUNNING = "A wiki export of this company is already running; try again when it has finished."
ROOT_NOT_OURS = (
    "export_root {root!r} holds files the wiki export did not write ({example}); it replaces "
    "the whole directory, so choose an empty or new one."
)
#: what an export writes, relative to its root: anything else there is not the export's
_EXPORT_FILE = re.compile(r"^(index\.md|raw|wiki|(raw|wiki)/[0-9a-f-]{1,40}\.md)$")
#: the two class ids of the export's advisory lock are this and the company id
_LOCK_CLASS = 0x57494B49  # "WIKI"


@dataclass(frozen=True)
class WikiExport:
    path: Path
    raw_pages: int
    wiki_pages: int
    exported_at: datetime


def _named_paths(company: Company) -> list[tuple[str, str]]:
    """The other server paths the company's config names (``memory.<field>``, value)."""
    memory = company_config(company).memory
    named = [("procedural.skill_md_directory", memory.procedural.skill_md_directory)]
    for field in ("checkpoint_path", "training_data_dir", "evaluation_file"):
        named.append((f"fine_tune.{field}", getattr(memory.fine_tune, field)))
    return [(field, value) for field, value in named if value]


def wiki_root(company: Company) -> Path:
    config = company_config(company).memory.consolidation.wiki_export
    try:
        root = tenant_path(company.pk, config.export_root)
    except TenantPathError as exc:
        raise UnprocessableError(BAD_ROOT.format(error=exc), code="wiki_export_root") from None
    if root == tenant_path(company.pk, "."):
        raise UnprocessableError(
            BAD_ROOT.format(error="it is the directory itself"), code="wiki_export_root"
        )
    for field, value in _named_paths(company):
        try:
            other = tenant_path(company.pk, value)
        except TenantPathError:
            continue  # refused where it is used; it cannot be inside the company's directory
        if other == root or other.is_relative_to(root) or root.is_relative_to(other):
            raise UnprocessableError(
                ROOT_OVERLAPS.format(field=field, value=value), code="wiki_export_root"
            )
    return root


@contextlib.contextmanager
def _export_lock(company: Company):
    """Hold the company's export lock (a session-level advisory lock, so it ends with the
    export even inside a longer transaction, and with the session if the process dies), or
    409 ``wiki_export_running``."""
    key = [_LOCK_CLASS, company.pk]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", key)
        if not cursor.fetchone()[0]:
            raise ConflictError(EXPORT_RUNNING, code="wiki_export_running")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", key)


def _staging_leftovers(root: Path) -> list[Path]:
    """Staging and replaced directories of earlier exports that a crash left behind."""
    pattern = re.compile(rf"^\.{re.escape(root.name)}\.(new|old)-[0-9a-f]{{32}}$")
    if not root.parent.is_dir():
        return []
    return [p for p in root.parent.iterdir() if pattern.match(p.name) and not p.is_symlink()]


def _refuse_foreign_files(root: Path, configured: str) -> None:
    if not root.exists() and not root.is_symlink():
        return
    if root.is_symlink() or not root.is_dir():
        raise ConflictError(
            ROOT_NOT_OURS.format(root=configured, example="it is not a directory"),
            code="wiki_export_root_not_ours",
        )
    for path in root.rglob("*"):
        relative = path.relative_to(root).as_posix()
        if path.is_symlink() or not _EXPORT_FILE.match(relative):
            raise ConflictError(
                ROOT_NOT_OURS.format(root=configured, example=relative),
                code="wiki_export_root_not_ours",
            )


def wiki_export_run(*, company: Company, trigger: str = "manual", actor=None) -> WikiExport:
    """Write the export (409 ``wiki_export_disabled`` when off, ``wiki_export_running``
    while another one runs, ``wiki_export_root_not_ours`` when the root holds other files)."""
    config = company_config(company).memory.consolidation.wiki_export
    if not config.enabled:
        raise ConflictError(WIKI_DISABLED, code="wiki_export_disabled")
    root = wiki_root(company)
    with _export_lock(company), transaction.atomic():
        for leftover in _staging_leftovers(root):
            shutil.rmtree(leftover)
        _refuse_foreign_files(root, config.export_root)
        limit = config.max_entries_per_view or MAX_VIEW
        now = timezone.now()
        staging = root.parent / f".{root.name}.new-{uuid.uuid4().hex}"
        staging.mkdir(parents=True)
        try:
            raw_links, wiki_links = _write_views(company, config, staging, limit, now, trigger)
            _swap_in(staging, root)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        audit_record(
            company=company,
            action_type=AuditAction.WIKI_EXPORTED,
            principal=actor,
            target_type="wiki_export",
            target_id=config.export_root,
            details={
                "trigger": trigger,
                "raw_pages": len(raw_links),
                "wiki_pages": len(wiki_links),
            },
        )
    return WikiExport(root, len(raw_links), len(wiki_links), now)


def _swap_in(staging: Path, root: Path) -> None:
    """``staging`` becomes ``root``; the previous export is removed only once it has."""
    old = root.parent / f".{root.name}.old-{uuid.uuid4().hex}"
    had_previous = root.exists()
    if had_previous:
        root.rename(old)
    try:
        staging.rename(root)
    except BaseException:
        if had_previous:
            old.rename(root)
        raise
    if had_previous:
        shutil.rmtree(old, ignore_errors=True)  # what a failure leaves, the next run sweeps


def _write_views(company, config, staging: Path, limit: int, now, trigger: str):
    raw_links, wiki_links = [], []
    if config.include_raw_tier:
        reports = list(
            ExecutionReport.objects.filter(company=company)
            .order_by("-created_at", "-id")
            .values(*REPORT_FIELDS, "created_at")[:limit]
        )
        lessons = author_lessons([r["id"] for r in reports])
        (staging / "raw").mkdir()
        for report in reports:
            name = f"{report['id']}.md"
            (staging / "raw" / name).write_text(
                raw_trace(report, lessons.get(report["id"])) + "\n", encoding="utf-8"
            )
            title = report["task_title"] or report["task_type"] or "report"
            raw_links.append(f"- [{title}](raw/{name}) — {report['outcome']}")
    if config.include_compressed_tier:
        (staging / "wiki").mkdir()
        rows = CompressedExperience.objects.filter(company=company)[:limit]
        for experience in rows:
            name = f"{experience.id}.md"
            source = (
                f"[raw trace](../raw/{experience.report_id}.md)"
                if config.include_raw_tier
                else f"report {experience.report_id}"
            )
            (staging / "wiki" / name).write_text(
                f"{experience.content}\n\n---\nFrom {source} · compression ratio "
                f"{experience.compression_ratio:.2f} · {experience.method} · "
                f"{experience.compressor_version}\n",
                encoding="utf-8",
            )
            wiki_links.append(f"- [{experience.content[:80]}](wiki/{name})")
    index = [
        f"# Experiences of {company.name}",
        "",
        f"Exported {now.isoformat()} ({trigger}).",
    ]
    if config.include_compressed_tier:
        index += ["", f"## Strategic learnings ({len(wiki_links)})", "", *wiki_links]
    if config.include_raw_tier:
        index += ["", f"## Raw traces ({len(raw_links)})", "", *raw_links]
    (staging / "index.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    return raw_links, wiki_links


def wiki_after_maintenance(*, company: Company, trigger: str) -> None:
    """``on_company_maintained`` handler: export when the trigger is ``on_consolidation``."""
    config = company_config(company).memory.consolidation.wiki_export
    if config.enabled and config.trigger == "on_consolidation":
        try:
            wiki_export_run(company=company, trigger="on_consolidation")
        except ConflictError as exc:
            # another export is writing (its files are as fresh), or the root holds other
            # files: the scheduled pass skips, the next one tries again
            logger.warning("WIKI_EXPORT_SKIPPED company=%s code=%s", company.slug, exc.code)


def wiki_archive(company: Company) -> bytes:
    """The current export as a zip (paths relative to ``export_root``); 404 ``no_wiki_export``
    when none was written. Symlinks inside are not followed."""
    root = wiki_root(company)
    if not (root / "index.md").is_file():
        raise NotFoundError(NO_EXPORT, code="no_wiki_export")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                archive.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()
