import pytest
from django_q.models import Schedule

from synthorg import schedules
from synthorg.schedules import ScheduleSpec, register_schedule_provider, sync_schedules


@pytest.fixture
def extra_specs(monkeypatch):
    """A provider whose declarations a test can change between syncs."""
    specs: dict[str, ScheduleSpec] = {}
    monkeypatch.setattr(schedules, "_providers", [lambda: list(specs.values())])
    return specs


@pytest.mark.django_db
def test_sync_creates_updates_and_deletes(extra_specs):
    extra_specs["a"] = ScheduleSpec(name="a", func="x.y", schedule_type=Schedule.HOURLY)
    first = sync_schedules()
    assert "synthorg:a" in first.created
    assert "synthorg:cluster-heartbeat" in first.created
    heartbeat = Schedule.objects.get(name="synthorg:cluster-heartbeat")
    assert (heartbeat.func, heartbeat.schedule_type, heartbeat.minutes) == (
        "persistence.tasks.record_cluster_heartbeat",
        Schedule.MINUTES,
        1,
    )

    again = sync_schedules()
    assert again == schedules.SyncReport(created=(), updated=(), deleted=())

    extra_specs["a"] = ScheduleSpec(
        name="a", func="x.y", schedule_type=Schedule.DAILY, kwargs={"company_id": 3}
    )
    updated = sync_schedules()
    assert updated.updated == ("synthorg:a",)
    row = Schedule.objects.get(name="synthorg:a")
    assert (row.schedule_type, row.kwargs) == (Schedule.DAILY, "{'company_id': 3}")

    del extra_specs["a"]
    assert sync_schedules().deleted == ("synthorg:a",)
    assert not Schedule.objects.filter(name="synthorg:a").exists()


@pytest.mark.django_db
def test_sync_leaves_foreign_schedules_alone(extra_specs):
    Schedule.objects.create(name="someone-else", func="a.b", schedule_type=Schedule.DAILY)
    sync_schedules()
    assert Schedule.objects.filter(name="someone-else").exists()


def test_register_provider_is_idempotent(monkeypatch):
    monkeypatch.setattr(schedules, "_providers", [])
    provider = lambda: []  # noqa: E731
    register_schedule_provider(provider)
    register_schedule_provider(provider)
    assert schedules._providers == [provider]


@pytest.mark.django_db
def test_heartbeat_task_runs_in_sync_mode(settings):
    from django_q.tasks import async_task

    from persistence.models import ClusterHeartbeat

    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": True}
    async_task("persistence.tasks.record_cluster_heartbeat", sync=True)
    assert ClusterHeartbeat.objects.filter(cluster="synthorg").count() == 1
