"""SKILL.md: the Agent Skills format, atomic writes, traversal refusal, the download endpoint."""

from __future__ import annotations

import os

import pytest

from memory.core.models.memory import Memory
from memory.procedural.models import ExecutionCapture
from memory.procedural.skill_md import (
    SkillPathError,
    render_skill_md,
    skill_path,
    write_skill_md,
)
from memory.procedural.tasks import capture_execution_report
from persistence.services.companies import company_config_set
from synthorg.company_config import CompanyConfigError, parse_company_config
from tests.memory.procedural.conftest import FAILED_REPORT, PROPOSAL, set_procedural

EXPECTED = """---
name: "helm-timeouts"
description: "Helm upgrades \\"time out\\": raise --timeout."
metadata:
  memory_id: "m-1"
---

# helm-timeouts

## When to use

A helm upgrade times out.

## What to do

Use --timeout 900s.

## Steps

1. Check hooks
2. Re-run

## Why

Hooks are slow.
"""


def render():
    return render_skill_md(
        name="helm-timeouts",
        description='Helm upgrades "time out": raise --timeout.',
        condition="A helm upgrade times out.",
        action="Use --timeout 900s.",
        rationale="Hooks are slow.",
        steps=["Check hooks", "Re-run"],
        metadata={"memory_id": "m-1"},
    )


def test_render_exact():
    assert render() == EXPECTED


def test_write_is_atomic_and_overwrites(tmp_path):
    path = write_skill_md(tmp_path, "acme", "helm-timeouts", "one")
    assert path == tmp_path / "acme" / "helm-timeouts" / "SKILL.md"
    write_skill_md(tmp_path, "acme", "helm-timeouts", "two")
    assert path.read_text() == "two"
    assert os.listdir(path.parent) == ["SKILL.md"]  # no temporary file left behind


@pytest.mark.parametrize(
    ("slug", "name"),
    [
        ("..", "x"),
        ("acme", ".."),
        ("acme", "../../etc"),
        ("acme/evil", "x"),
        ("acme", "x/y"),
        ("", "x"),
        ("acme", ".hidden"),
        ("acme", "a\\b"),
    ],
)
def test_traversal_is_refused(tmp_path, slug, name):
    with pytest.raises(SkillPathError):
        write_skill_md(tmp_path / "skills", slug, name, "x")
    assert not (tmp_path / "skills").exists() or not any((tmp_path / "skills").rglob("*"))


def test_symlink_escape_is_refused(tmp_path):
    base, outside = tmp_path / "skills", tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    (base / "acme").symlink_to(outside)
    with pytest.raises(SkillPathError):
        skill_path(base, "acme", "x")
    with pytest.raises(SkillPathError):
        write_skill_md(base, "acme", "x", "x")
    assert list(outside.iterdir()) == []


def test_config_rejects_parent_traversal():
    with pytest.raises(CompanyConfigError) as info:
        parse_company_config({"memory": {"procedural": {"skill_md_directory": "skills/../.."}}})
    assert info.value.errors[0]["field"] == "memory.procedural.skill_md_directory"


@pytest.fixture
def lesson(caller, llm_server, tmp_path, settings, django_capture_on_commit_callbacks) -> Memory:
    settings.SYNTHORG_TENANT_FILES_DIR = tmp_path
    set_procedural(caller.company, skill_md_directory="skills")
    report_id = caller.client.post("/api/v1/executions", FAILED_REPORT, format="json").json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        assert capture_execution_report(report_id) == "captured"
    return Memory.objects.get(pk=ExecutionCapture.objects.get(report_id=report_id).memory_id)


@pytest.mark.django_db
def test_accepted_lesson_is_written_and_downloadable(caller, lesson, tmp_path):
    skill = lesson.lesson.skill_name
    slug = caller.company.slug
    path = tmp_path / str(caller.company.pk) / "skills" / slug / skill / "SKILL.md"
    text = path.read_text()
    assert text.startswith(f'---\nname: "{skill}"\ndescription: "{PROPOSAL["discovery"]}"\n')
    assert f'  memory_id: "{lesson.pk}"\n' in text
    assert f'  execution_report: "{lesson.lesson.report_id}"\n' in text
    assert "## When to use\n\n" + PROPOSAL["condition"] in text
    assert "## Steps\n\n1. Check the hook duration\n2. Re-run with --timeout 900s --atomic" in text
    assert "## Why\n\n" + PROPOSAL["rationale"] in text

    response = caller.client.get(f"/api/v1/memories/{lesson.pk}/skill.md")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response.content.decode() == text
    accept_md = caller.client.get(
        f"/api/v1/memories/{lesson.pk}/skill.md", HTTP_ACCEPT="text/markdown"
    )
    assert accept_md.status_code == 200 and accept_md.content.decode() == text


@pytest.mark.django_db
def test_download_works_without_a_directory(caller, llm_server, tmp_path):
    report_id = caller.client.post("/api/v1/executions", FAILED_REPORT, format="json").json()["id"]
    capture_execution_report(report_id)
    memory_id = ExecutionCapture.objects.get(report_id=report_id).memory_id
    response = caller.client.get(f"/api/v1/memories/{memory_id}/skill.md")
    assert response.status_code == 200 and b"## When to use" in response.content
    assert not any(tmp_path.iterdir())


@pytest.mark.django_db
def test_download_is_isolated(caller, peer, outsider, lesson, human_client):
    url = f"/api/v1/memories/{lesson.pk}/skill.md"
    for other in (peer, outsider):
        response = other.client.get(url)
        assert response.status_code == 404
        assert response.json()["code"] == "lesson_not_found"
    assert human_client.get(url).status_code == 200  # a member of the company


@pytest.mark.django_db
def test_download_of_a_memory_that_is_not_a_lesson(caller):
    response = caller.client.post(
        "/api/v1/memories", {"content": "Use helm 3.", "category": "procedural"}, format="json"
    )
    url = f"/api/v1/memories/{response.json()['id']}/skill.md"
    assert caller.client.get(url).status_code == 404


@pytest.mark.django_db
def test_unwritable_directory_keeps_the_lesson(
    caller, llm_server, tmp_path, settings, caplog, django_capture_on_commit_callbacks
):
    settings.SYNTHORG_TENANT_FILES_DIR = tmp_path
    (tmp_path / str(caller.company.pk)).mkdir()
    blocker = tmp_path / str(caller.company.pk) / "file"
    blocker.write_text("not a directory")
    company_config_set(
        company=caller.company,
        data={"memory": {"procedural": {"skill_md_directory": "file"}}},
    )
    report_id = caller.client.post("/api/v1/executions", FAILED_REPORT, format="json").json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        assert capture_execution_report(report_id) == "captured"
    assert "could not write SKILL.md" in caplog.text
    assert Memory.objects.filter(category="procedural").count() == 1


@pytest.mark.parametrize(
    "directory",
    ["/tmp/elsewhere", "/", "skills/../..", "../other-company", "/etc/cron.d"],
)
@pytest.mark.django_db
def test_a_company_admin_cannot_name_a_directory_outside_its_own(caller, directory):
    """Finding 5: an absolute skill_md_directory was accepted and written to."""
    from synthorg.errors import InvalidInputError

    before = (caller.company.config, caller.company.config_revision)
    with pytest.raises(InvalidInputError) as info:
        company_config_set(
            company=caller.company,
            data={"memory": {"procedural": {"skill_md_directory": directory}}},
        )
    [error] = info.value.errors
    assert error["field"] == "memory.procedural.skill_md_directory"
    caller.company.refresh_from_db()
    assert (caller.company.config, caller.company.config_revision) == before


@pytest.mark.django_db
def test_stored_absolute_directories_are_dropped_by_the_migration(caller):
    """A config stored before the rule still parses: the absolute directory is dropped."""
    import importlib

    from django.apps import apps

    from persistence.models import Company
    from persistence.selectors.config import company_config

    migration = importlib.import_module("persistence.migrations.0007_company_config_relative_paths")
    config = {"memory": {"procedural": {"skill_md_directory": "/etc/cron.d", "enabled": True}}}
    Company.objects.filter(pk=caller.company.pk).update(config=config, config_revision=5)
    migration.drop_absolute_paths(apps, None)
    caller.company.refresh_from_db()
    assert caller.company.config_revision == 6
    assert company_config(caller.company).memory.procedural.skill_md_directory is None


@pytest.mark.django_db
def test_a_symlink_out_of_the_company_directory_is_refused(
    caller, llm_server, tmp_path, settings, caplog, django_capture_on_commit_callbacks
):
    settings.SYNTHORG_TENANT_FILES_DIR = tmp_path / "tenants"
    company_dir = tmp_path / "tenants" / str(caller.company.pk)
    company_dir.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (company_dir / "skills").symlink_to(outside)
    set_procedural(caller.company, skill_md_directory="skills")
    report_id = caller.client.post("/api/v1/executions", FAILED_REPORT, format="json").json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        capture_execution_report(report_id)
    assert list(outside.iterdir()) == []
    assert "could not write SKILL.md" in caplog.text
