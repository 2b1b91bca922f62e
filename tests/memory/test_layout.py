"""The wave-3 layout: the core keeps the ``memory`` app label, and ``sync_schedules`` moves
schedules stored under the old dotted paths (``memory.tasks.*``) to the new ones."""

import pytest
from django.apps import apps
from django.core.management import call_command
from django_q.models import Schedule


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
