"""The wave-3 layout: tasks queued under the old dotted paths still run for one release, and
``sync_schedules`` moves the stored schedules to the new paths."""

import pytest
from django.apps import apps
from django.core.management import call_command
from django.utils.module_loading import import_string
from django_q.models import Schedule

from memory.core import tasks

# What a q2 task row or schedule stored before the move, and where it lives now.
MOVED_TASKS = {
    "memory.tasks.backfill_pending_embeddings": tasks.backfill_pending_embeddings,
    "memory.tasks.run_company_maintenance": tasks.run_company_maintenance,
    "memory.tasks.run_agent_maintenance": tasks.run_agent_maintenance,
    "memory.reembed.tasks.run_reembed_job": tasks.run_reembed_job,
    "memory.reembed.tasks.resume_reembed_jobs": tasks.resume_reembed_jobs,
}


@pytest.mark.parametrize("old_path", sorted(MOVED_TASKS))
def test_a_task_queued_under_its_old_path_resolves_to_the_moved_function(old_path):
    assert import_string(old_path) is MOVED_TASKS[old_path]


def test_the_core_keeps_the_memory_app_label_and_its_tables():
    core = apps.get_app_config("memory")
    assert core.name == "memory.core"
    assert {model._meta.db_table for model in core.get_models()} == {
        "memory_memory",
        "memory_archivedmemory",
        "memory_maintenancerun",
        "memory_reembedjob",
        "memory_reembedstatuschange",  # durable jobs (issue 34): the job's history
        "memory_requestlogentry",
        "memory_memorychunk",
        "memory_memoryrevision",
    }
    assert list(apps.get_app_config("memory_interfaces").get_models()) == []


@pytest.mark.django_db
def test_sync_schedules_rewrites_a_schedule_stored_under_the_old_path():
    Schedule.objects.create(
        name="synthorg:memory-embedding-backfill",
        func="memory.tasks.backfill_pending_embeddings",
        schedule_type=Schedule.MINUTES,
        minutes=5,
        repeats=-1,
    )
    call_command("sync_schedules", verbosity=0)
    stored = Schedule.objects.get(name="synthorg:memory-embedding-backfill")
    assert stored.func == "memory.core.tasks.backfill_pending_embeddings"
    assert not Schedule.objects.filter(func__startswith="memory.tasks.").exists()
    assert not Schedule.objects.filter(func__startswith="memory.reembed.").exists()
