"""Maintenance runs and the archive are visible (read-only) in the admin."""

import pytest

from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from memory.core.services.maintenance import run_maintenance
from tests.memory.core.maintenance.conftest import configure, seed

pytestmark = pytest.mark.django_db


def test_admin_lists_runs_and_archive_read_only(admin_client, caller, now):
    configure(caller.company, archival={"enabled": True, "age_threshold_days": 30})
    seed(caller.agent, 3, now=now, age_days=40)
    run_maintenance(agent=caller.agent, now=now)
    run = MaintenanceRun.objects.get()
    archived = ArchivedMemory.objects.first()

    listing = admin_client.get("/admin/memory/maintenancerun/")
    assert listing.status_code == 200
    assert b"succeeded" in listing.content.lower()
    detail = admin_client.get(f"/admin/memory/maintenancerun/{run.pk}/change/")
    assert detail.status_code == 200
    assert b"archival_index" in detail.content
    assert admin_client.get("/admin/memory/archivedmemory/").status_code == 200
    assert (
        admin_client.get(f"/admin/memory/archivedmemory/{archived.pk}/change/").status_code == 200
    )
    # read-only: no add, no delete
    assert admin_client.get("/admin/memory/maintenancerun/add/").status_code == 403
    assert (
        admin_client.post(f"/admin/memory/archivedmemory/{archived.pk}/delete/").status_code == 403
    )
    assert ArchivedMemory.objects.count() == 2
