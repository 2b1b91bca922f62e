"""The wiki export: raw/, wiki/ and index.md under a server-owned directory, triggered
manually (REST) or after consolidation, downloadable as a zip (REST and console)."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.test import Client
from rest_framework.test import APIClient

from memory.core.services.maintenance import run_company_maintenance
from memory.procedural.models import CompressedExperience, ExecutionReport
from memory.procedural.services.compression import experience_compress_run
from memory.procedural.tasks import capture_execution_report
from persistence.models import AuditEntry
from persistence.services.companies import company_config_set
from synthorg.company_config import CompanyConfigError, parse_company_config
from synthorg.tenancy import tenant_path
from tests.memory.procedural.conftest import FAILED_REPORT
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/experiences/wiki"


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}


def _configure(company, **wiki) -> None:
    company_config_set(
        company=company,
        data={
            "memory": {
                "consolidation": {
                    "experience_compressor": {"enabled": True},
                    "wiki_export": {"enabled": True, **wiki},
                }
            }
        },
    )


def _human(company, role="operator"):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = APIClient()
    client.force_login(membership.user)
    return client


def _experience(caller, title="Deploy billing service") -> CompressedExperience:
    report_id = caller.client.post(
        "/api/v1/executions", {**FAILED_REPORT, "task_title": title}, format="json"
    ).json()["id"]
    capture_execution_report(report_id)
    experience_compress_run(company=caller.company)
    return CompressedExperience.objects.get(report_id=report_id)


def test_disabled_by_default(company):
    response = _human(company).post(URL)
    assert (response.status_code, response.json()["code"]) == (409, "wiki_export_disabled")
    zipped = _human(company).get(f"{URL}.zip")
    assert zipped.status_code == 404
    assert zipped.json()["code"] == "no_wiki_export"


def test_manual_export_writes_three_views_and_downloads_as_zip(company, caller):
    _configure(company, trigger="manual")
    experience = _experience(caller)
    report = ExecutionReport.objects.get()

    response = _human(company).post(URL)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["export_root"], body["raw_pages"], body["wiki_pages"]) == ("wiki", 1, 1)

    root = tenant_path(company.pk, "wiki")
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == [
        "index.md",
        "raw",
        f"raw/{report.pk}.md",
        "wiki",
        f"wiki/{experience.pk}.md",
    ]
    raw = (root / "raw" / f"{report.pk}.md").read_text()
    assert raw.startswith("# Deploy billing service\n- outcome: failed\n")
    assert "helm upgrade timed out after 300s" in raw and "## Capture" in raw
    page = (root / "wiki" / f"{experience.pk}.md").read_text()
    assert page.startswith(experience.content + "\n\n---\nFrom [raw trace](../raw/")
    index = (root / "index.md").read_text()
    assert f"(wiki/{experience.pk}.md)" in index and f"(raw/{report.pk}.md)" in index
    assert "## Strategic learnings (1)" in index and "## Raw traces (1)" in index
    audit = AuditEntry.objects.get(action_type="wiki.exported")
    assert audit.details == {"trigger": "manual", "raw_pages": 1, "wiki_pages": 1}

    zipped = _human(company, "viewer").get(f"{URL}.zip")
    assert zipped.status_code == 200 and zipped["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(zipped.content))
    assert sorted(archive.namelist()) == [
        "index.md",
        f"raw/{report.pk}.md",
        f"wiki/{experience.pk}.md",
    ]
    assert archive.read("index.md").decode() == index
    assert caller.client.get(f"{URL}.zip").status_code == 403  # agents: humans' download

    membership = MembershipFactory(company=company, role="viewer", user__password=None)
    console = Client()
    console.force_login(membership.user)
    page = console.get("/console/memories/executions").content.decode()
    assert 'id="wiki-zip-link" href="/console/memories/wiki.zip"' in page
    download = console.get("/console/memories/wiki.zip")
    assert download.status_code == 200
    assert zipfile.ZipFile(io.BytesIO(download.content)).read("index.md").decode() == index


def test_views_can_be_left_out_capped_and_a_new_export_replaces_the_old(company, caller):
    _configure(company, trigger="manual", max_entries_per_view=1)
    _experience(caller, "first")
    newest = _experience(caller, "second")
    assert _human(company).post(URL).json()["raw_pages"] == 1  # the cap, newest first
    root = tenant_path(company.pk, "wiki")
    [raw_page] = list((root / "raw").iterdir())
    assert raw_page.name == f"{newest.report_id}.md"

    _configure(company, trigger="manual", include_raw_tier=False)
    body = _human(company).post(URL).json()
    assert (body["raw_pages"], body["wiki_pages"]) == (0, 2)
    assert not (root / "raw").exists()  # the previous export's files went with it
    page = (root / "wiki" / f"{newest.pk}.md").read_text()
    assert f"From report {newest.report_id}" in page
    assert [p.name for p in root.parent.iterdir() if p.name.startswith(".wiki.")] == []


def test_exported_after_consolidation_only_when_triggered_so(company, caller):
    _configure(company, trigger="manual")
    _experience(caller)
    run_company_maintenance(company=company)
    root = tenant_path(company.pk, "wiki")
    assert not root.exists()
    _configure(company, trigger="on_consolidation")
    run_company_maintenance(company=company)
    assert (root / "index.md").is_file()
    assert AuditEntry.objects.get(action_type="wiki.exported").details["trigger"] == (
        "on_consolidation"
    )


def test_only_operators_export(company, caller):
    _configure(company, trigger="manual")
    assert caller.client.post(URL).status_code == 403
    assert _human(company, "viewer").post(URL).status_code == 403
    assert not tenant_path(company.pk, "wiki").exists()


def test_export_root_must_stay_in_the_company_directory():
    assert parse_company_config({}).memory.consolidation.wiki_export.model_dump() == {
        "enabled": False,
        "export_root": "wiki",
        "trigger": "on_consolidation",
        "include_raw_tier": True,
        "include_compressed_tier": True,
        "max_entries_per_view": None,
    }
    for root in ("/srv/wiki", "../other", "a/../../b", ".", "C:\\wiki"):
        with pytest.raises(CompanyConfigError):
            parse_company_config(
                {"memory": {"consolidation": {"wiki_export": {"export_root": root}}}}
            )
    with pytest.raises(CompanyConfigError):
        parse_company_config({"memory": {"consolidation": {"wiki_export": {"trigger": "hourly"}}}})


def _console(company, role):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client()
    client.force_login(membership.user)
    return client


def test_console_operator_compresses_and_exports_through_the_same_services(company, caller):
    _configure(company, trigger="manual")
    report_id = caller.client.post("/api/v1/executions", FAILED_REPORT, format="json").json()["id"]
    capture_execution_report(report_id)
    operator = _console(company, "operator")
    page = operator.get("/console/memories/executions").content.decode()
    assert 'id="compress-now"' in page and 'id="wiki-export-now"' in page
    assert "disabled" not in page.split('id="experience-actions"')[1].split("</div>")[0]

    done = operator.post("/console/memories/executions/compress", follow=True)
    assert done.status_code == 200
    experience = CompressedExperience.objects.get(report_id=report_id)
    assert (
        "Compressor ran (extractive): 1 reports read, 1 compressed, 0 below the compression "
        "ratio, 0 failed (left for the next run)." in done.content.decode()
    )
    exported = operator.post("/console/memories/executions/wiki", follow=True)
    assert "Wiki exported: 1 raw pages, 1 wiki pages." in exported.content.decode()
    root = tenant_path(company.pk, "wiki")
    assert (root / "wiki" / f"{experience.pk}.md").is_file()
    audit = AuditEntry.objects.get(action_type="wiki.exported")
    assert audit.actor_user_id is not None and audit.details["trigger"] == "manual"


def test_console_viewers_cannot_run_them_and_disabled_features_say_why(company, caller):
    viewer = _console(company, "viewer")
    assert 'id="compress-now"' not in viewer.get("/console/memories/executions").content.decode()
    refused = viewer.post("/console/memories/executions/compress")
    assert refused.status_code == 403
    assert "operators and admins run these" in refused.content.decode()
    assert viewer.post("/console/memories/executions/wiki").status_code == 403
    assert not tenant_path(company.pk, "wiki").exists()

    operator = _console(company, "operator")  # both off by default
    page = operator.get("/console/memories/executions").content.decode()
    assert 'id="compress-now" disabled' in page and 'id="wiki-export-now" disabled' in page
    off = operator.post("/console/memories/executions/wiki")
    assert off.status_code == 409
    assert "wiki export" in off.content.decode().lower()
    assert AuditEntry.objects.filter(action_type="wiki.exported").count() == 0
    assert CompressedExperience.objects.filter(report__company=company).count() == 0


def test_files_stay_with_their_company_when_its_slug_is_renamed_and_taken(company, caller):
    """Issue 34 (high): company directories were named by slug. After B renamed its slug
    and C took the freed one, C downloaded B's export and C's export replaced B's files."""
    from persistence.services.companies import company_create, company_rename

    _configure(company, trigger="manual")
    _experience(caller)
    assert _human(company).post(URL).status_code == 201
    mine = _human(company, "viewer").get(f"{URL}.zip").content
    old_slug = company.slug
    company_rename(company=company, name=company.name, slug=f"{old_slug}-renamed")

    squatter = company_create(name="Squatter", slug=old_slug)
    _configure(squatter, trigger="manual")
    refused = _human(squatter, "viewer").get(f"{URL}.zip")
    assert (refused.status_code, refused.json()["code"]) == (404, "no_wiki_export")
    console = _console(squatter, "viewer").get("/console/memories/wiki.zip")
    assert console.status_code == 404

    exported = _human(squatter).post(URL)
    assert (exported.status_code, exported.json()["raw_pages"]) == (201, 0)
    assert _human(company, "viewer").get(f"{URL}.zip").content == mine  # untouched
    company_rename(company=squatter, name=squatter.name, slug="squatter")
    company_rename(company=company, name=company.name, slug=old_slug)  # swapped back
    theirs = zipfile.ZipFile(io.BytesIO(_human(squatter, "viewer").get(f"{URL}.zip").content))
    assert "## Raw traces (0)" in theirs.read("index.md").decode()
    assert _human(company, "viewer").get(f"{URL}.zip").content == mine


def _siblings(company):
    base = tenant_path(company.pk, ".")
    return sorted(p.name for p in base.iterdir()) if base.is_dir() else []


def test_a_second_export_while_one_runs_is_refused_and_leaves_nothing(company, caller):
    """Issue 34: two exports at once answered 500 and left a ``.wiki.old-*`` directory."""
    from django.db import connections

    from memory.procedural.services import wiki

    _configure(company, trigger="manual")
    _experience(caller)
    assert _human(company).post(URL).status_code == 201
    before = _human(company, "viewer").get(f"{URL}.zip").content
    other = connections.create_connection("default")  # a second session: the running export
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [wiki._LOCK_CLASS, company.pk])
        refused = _human(company).post(URL)
        assert (refused.status_code, refused.json()["code"]) == (409, "wiki_export_running")
        assert refused["Content-Type"] == "application/problem+json"
        console = _console(company, "operator").post("/console/memories/executions/wiki")
        assert console.status_code == 409
    finally:
        other.close()  # ends the session, and its lock
    assert _siblings(company) == ["wiki"]
    assert _human(company, "viewer").get(f"{URL}.zip").content == before
    assert AuditEntry.objects.filter(action_type="wiki.exported").count() == 1
    assert _human(company).post(URL).status_code == 201  # free again


def test_an_export_root_overlapping_the_skill_md_directory_is_refused(company, caller):
    """Issue 34: with export_root at the SKILL.md directory the export deleted both SKILL.md
    files (it replaces its whole directory)."""
    from memory.procedural.skill_md import write_skill_md

    skills = tenant_path(company.pk, "skills")
    written = [write_skill_md(skills, company.slug, name, name) for name in ("a", "b")]
    for root, directory in (("skills", "skills"), ("skills/acme", "skills"), ("out", "out/s")):
        company_config_set(
            company=company,
            data={
                "memory": {
                    "procedural": {"skill_md_directory": directory},
                    "consolidation": {
                        "wiki_export": {"enabled": True, "trigger": "manual", "export_root": root}
                    },
                }
            },
        )
        refused = _human(company).post(URL)
        assert (refused.status_code, refused.json()["code"]) == (422, "wiki_export_root")
        assert (
            f"overlaps memory.procedural.skill_md_directory ({directory!r})"
            in (refused.json()["detail"])
        )
    assert [path.read_text() for path in written] == ["a", "b"]
    assert not AuditEntry.objects.filter(action_type="wiki.exported").exists()


def test_a_root_holding_files_the_export_did_not_write_is_refused_not_deleted(company, caller):
    _configure(company, trigger="manual")
    root = tenant_path(company.pk, "wiki")
    (root / "wiki").mkdir(parents=True)
    (root / "notes.txt").write_text("mine")
    (root / "wiki" / "SKILL.md").write_text("mine too")
    refused = _human(company).post(URL)
    assert (refused.status_code, refused.json()["code"]) == (409, "wiki_export_root_not_ours")
    assert (
        "'wiki' holds files the wiki export did not write (notes.txt)" in refused.json()["detail"]
    )
    assert (root / "notes.txt").read_text() == "mine"
    assert (root / "wiki" / "SKILL.md").read_text() == "mine too"
    assert _siblings(company) == ["wiki"]


def test_what_a_crashed_export_left_behind_is_removed_by_the_next(company, caller):
    _configure(company, trigger="manual")
    base = tenant_path(company.pk, ".")
    stale = [base / f".wiki.new-{'a' * 32}", base / f".wiki.old-{'b' * 32}"]
    for path in stale:
        (path / "raw").mkdir(parents=True)
        (path / "index.md").write_text("half")
    (base / ".wiki.new-keep").mkdir()  # not an export's name: not touched
    assert _human(company).post(URL).status_code == 201
    assert _siblings(company) == [".wiki.new-keep", "wiki"]


def test_a_long_export_root_is_refused_when_the_config_is_written(company):
    """Issue 34: a 300-character export_root passed validation, then the export answered
    500 (a name too long for the file system, and for the audit trail's target)."""
    from synthorg.errors import InvalidInputError

    for root in ("w" * 300, "a/" * 50 + "b"):
        with pytest.raises(InvalidInputError) as refused:
            _configure(company, trigger="manual", export_root=root)
        assert refused.value.errors == [
            {
                "field": "memory.consolidation.wiki_export.export_root",
                "message": f"must be at most 100 characters (got {len(root)})",
                "code": "value_error",
            }
        ]
    _configure(company, trigger="manual", export_root="w" * 100)
    exported = _human(company).post(URL)
    assert exported.status_code == 201 and exported.json()["export_root"] == "w" * 100
