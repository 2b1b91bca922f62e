"""Per-company maintenance schedules follow the config; the q2 tasks call the service."""

import pytest
from django.core.management import call_command
from django_q.models import Schedule

from memory.core.models.maintenance import MaintenanceRun
from memory.core.models.memory import Memory
from memory.core.schedules import resync_on_config_change, schedule_name
from persistence.services.companies import company_config_set
from synthorg.schedules import SCHEDULE_PREFIX, sync_schedules
from tests.memory.core.maintenance.conftest import configure, seed
from tests.persistence.factories import CompanyFactory

pytestmark = pytest.mark.django_db


def maintenance_schedule(company):
    return Schedule.objects.filter(name=SCHEDULE_PREFIX + schedule_name(company.pk)).first()


def test_schedules_are_created_updated_and_removed_with_the_config(
    company, django_capture_on_commit_callbacks
):
    other = CompanyFactory()
    sync_schedules()
    row = maintenance_schedule(company)
    assert (row.func, row.schedule_type, row.kwargs) == (
        "memory.core.tasks.run_company_maintenance",
        Schedule.DAILY,
        repr({"company_id": company.pk}),
    )
    assert maintenance_schedule(other).schedule_type == Schedule.DAILY

    # a config change re-syncs on commit: hourly → updated
    with django_capture_on_commit_callbacks(execute=True):
        configure(company, interval="hourly")
    assert maintenance_schedule(company).schedule_type == Schedule.HOURLY
    assert maintenance_schedule(company).pk == row.pk

    with django_capture_on_commit_callbacks(execute=True):
        company_config_set(
            company=company, data={"memory": {"options": {"consolidation_interval": "weekly"}}}
        )
    assert maintenance_schedule(company).schedule_type == Schedule.WEEKLY

    # never → removed; the other company's schedule stays
    with django_capture_on_commit_callbacks(execute=True):
        configure(company, interval="never")
    assert maintenance_schedule(company) is None
    assert maintenance_schedule(other) is not None

    # the kill switch keeps the schedule (the run itself pauses)
    with django_capture_on_commit_callbacks(execute=True):
        configure(company, interval="daily", enabled=False)
    assert maintenance_schedule(company).schedule_type == Schedule.DAILY

    # a deleted company's schedule goes at the next sync
    other_pk = other.pk
    other.delete()
    resync_on_config_change(company)
    assert not Schedule.objects.filter(name=SCHEDULE_PREFIX + schedule_name(other_pk)).exists()


def test_q2_company_task_in_sync_mode_runs_maintenance(caller, now, settings):
    from django_q.tasks import async_task

    configure(caller.company, retention={"default_retention_days": 5})
    seed(caller.agent, 3, now=now, age_days=10)
    seed(caller.agent, 2, now=now, age_days=1)
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": True}

    async_task("memory.core.tasks.run_company_maintenance", company_id=caller.company.pk, sync=True)

    assert Memory.objects.filter(agent=caller.agent).count() == 2
    run = MaintenanceRun.objects.get(agent=caller.agent)
    assert (run.trigger, run.status, run.retention_archived, run.deleted) == (
        "schedule",
        "succeeded",
        3,
        0,
    )


def test_q2_agent_task_in_sync_mode_runs_maintenance(caller, peer, now, settings):
    from django_q.tasks import async_task

    configure(caller.company, retention={"default_retention_days": 5})
    seed(caller.agent, 2, now=now, age_days=10)
    seed(peer.agent, 2, now=now, age_days=10)
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": True}

    async_task("memory.core.tasks.run_agent_maintenance", caller.agent.pk, sync=True)

    assert not Memory.objects.filter(agent=caller.agent).exists()
    assert Memory.objects.filter(agent=peer.agent).count() == 2
    assert MaintenanceRun.objects.get().agent_id == caller.agent.pk


def test_management_command_prints_progress_and_a_summary(caller, peer, now, capsys):
    configure(caller.company, retention={"default_retention_days": 5})
    seed(caller.agent, 3, now=now, age_days=10)
    seed(peer.agent, 1, now=now, age_days=10)

    call_command("run_maintenance", "--company", caller.company.slug, "--dry-run")
    out = capsys.readouterr().out
    assert "DRY RUN — nothing was changed" in out
    assert Memory.objects.count() == 4 and not MaintenanceRun.objects.exists()

    call_command(
        "run_maintenance", "--company", str(caller.company.pk), "--agent", str(caller.agent.pk)
    )
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"[1/1] agent {caller.agent.pk} (")
    assert lines[0].split(" … ")[1].startswith("succeeded in ")
    header = next(line for line in lines if "retention" in line)
    assert header.split() == [
        "agent",
        "status",
        "retention",
        "expired",
        "consol.",
        "summaries",
        "capped",
        "archived",
        "deleted",
        "errors",
        "seconds",
    ]
    row = lines[lines.index(header) + 1].split()
    assert row[:10] == [str(caller.agent.pk), "succeeded", "3", "0", "0", "0", "0", "3", "0", "0"]
    assert lines[-1].split()[:9] == ["total", "3", "0", "0", "0", "0", "3", "0", "0"]
    assert Memory.objects.filter(agent=caller.agent).count() == 0
    assert Memory.objects.filter(agent=peer.agent).count() == 1
    assert MaintenanceRun.objects.get().trigger == "command"


def test_management_command_skips_paused_companies_and_rejects_unknown_ones(caller, now, capsys):
    from django.core.management.base import CommandError

    configure(caller.company, enabled=False, retention={"default_retention_days": 5})
    seed(caller.agent, 1, now=now, age_days=10)
    call_command("run_maintenance")
    assert "consolidation disabled (kill switch), skipped" in capsys.readouterr().out
    assert Memory.objects.count() == 1
    with pytest.raises(CommandError, match="No company 'nope'"):
        call_command("run_maintenance", "--company", "nope")
