"""The wiki export (seed 003 ``WikiExportConfig``): the company's experiences as files.

Under ``export_root`` (inside ``SYNTHORG_TENANT_FILES_DIR/<company id>/``, never elsewhere):

* ``raw/<report id>.md`` — Tier 1: each execution report and its capture's lesson
  (:func:`memory.procedural.compression.raw_trace`), newest first;
* ``wiki/<experience id>.md`` — Tier 2: each compressed experience, linking its raw trace;
* ``index.md`` — what was exported, when, and a link to every page.

``include_raw_tier`` / ``include_compressed_tier`` leave a view out (its directory is not
written); ``max_entries_per_view`` caps each view (None: 1000). The export is built in a
sibling directory and swapped in by renames, so a reader never sees half an export, and
the previous export's files are removed with it. Triggered after the company's scheduled
consolidation (``trigger: on_consolidation``, registered with
:func:`memory.core.extensions.on_company_maintained`) or by REST; downloadable as a zip
(:func:`wiki_archive`).
"""

from __future__ import annotations

import io
import logging
import shutil
import uuid
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.utils import timezone

from memory.procedural.compression import raw_trace
from memory.procedural.models import CompressedExperience, ExecutionReport
from memory.procedural.services.compression import REPORT_FIELDS, author_lessons
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


@dataclass(frozen=True)
class WikiExport:
    path: Path
    raw_pages: int
    wiki_pages: int
    exported_at: datetime


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
    return root


def wiki_export_run(*, company: Company, trigger: str = "manual", actor=None) -> WikiExport:
    """Write the export (409 ``wiki_export_disabled`` when off)."""
    config = company_config(company).memory.consolidation.wiki_export
    if not config.enabled:
        raise ConflictError(WIKI_DISABLED, code="wiki_export_disabled")
    root = wiki_root(company)
    limit = config.max_entries_per_view or MAX_VIEW
    now = timezone.now()
    staging = root.parent / f".{root.name}.new-{uuid.uuid4().hex}"
    staging.mkdir(parents=True)
    try:
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
        old = root.parent / f".{root.name}.old-{uuid.uuid4().hex}"
        if root.exists():
            root.rename(old)
        staging.rename(root)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    audit_record(
        company=company,
        action_type="wiki.exported",
        principal=actor,
        target_type="wiki_export",
        target_id=config.export_root,
        details={"trigger": trigger, "raw_pages": len(raw_links), "wiki_pages": len(wiki_links)},
    )
    return WikiExport(root, len(raw_links), len(wiki_links), now)


def wiki_after_maintenance(*, company: Company, trigger: str) -> None:
    """``on_company_maintained`` handler: export when the trigger is ``on_consolidation``."""
    config = company_config(company).memory.consolidation.wiki_export
    if config.enabled and config.trigger == "on_consolidation":
        wiki_export_run(company=company, trigger="on_consolidation")


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
