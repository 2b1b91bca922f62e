"""The one place that declares django-q2 schedules, applied idempotently.

Apps add entries with :func:`register_schedule` (in their ``AppConfig.ready``) or, for
per-company schedules, a provider with :func:`register_schedule_provider`.
``sync_schedules()`` (run by ``manage.py sync_schedules``, by ``make run`` and after
company config changes) creates missing schedules, updates changed ones and deletes
schedules under the ``synthorg:`` prefix that nobody declares any more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

SCHEDULE_PREFIX = "synthorg:"
#: The q2 cluster that runs LLM work (captures, extraction, dream, the evolver): its own
#: workers and queue, so a hanging LLM endpoint holds none of the default cluster's workers
#: (webhooks, maintenance, re-embedding). Run it with ``Q_CLUSTER_NAME=llm manage.py qcluster``
#: (``manage.py serve`` starts both); settings ``Q_CLUSTER["ALT_CLUSTERS"]["llm"]``.
LLM_CLUSTER = "llm"


@dataclass(frozen=True)
class ScheduleSpec:
    name: str  # unique; stored with the SCHEDULE_PREFIX
    func: str  # dotted path of the q2 task
    schedule_type: str  # django_q Schedule.MINUTES / HOURLY / DAILY / WEEKLY ...
    minutes: int | None = None
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    #: the q2 cluster that runs it (None: the default cluster; :data:`LLM_CLUSTER`)
    cluster: str | None = None
    #: seconds past the minute of its runs (0–59; None: whenever it was created): two
    #: every-minute schedules, one at offset 0 and one at 30, make a tick every 30 s (q2
    #: moves each run on from the last one's time, so the phase holds)
    offset: int | None = None

    @property
    def full_name(self) -> str:
        return SCHEDULE_PREFIX + self.name


_static: dict[str, ScheduleSpec] = {}
_providers: list[Callable[[], Iterable[ScheduleSpec]]] = []


def register_schedule(spec: ScheduleSpec) -> None:
    _static[spec.name] = spec


def register_schedule_provider(provider: Callable[[], Iterable[ScheduleSpec]]) -> None:
    if provider not in _providers:
        _providers.append(provider)


def declared_schedules() -> dict[str, ScheduleSpec]:
    specs = dict(_static)
    for provider in _providers:
        for spec in provider():
            specs[spec.name] = spec
    return specs


@dataclass(frozen=True)
class SyncReport:
    created: tuple[str, ...]
    updated: tuple[str, ...]
    deleted: tuple[str, ...]


def _schedule_values(spec: ScheduleSpec) -> dict:
    return {
        "func": spec.func,
        "schedule_type": spec.schedule_type,
        "minutes": spec.minutes,
        "args": repr(spec.args) if spec.args else None,
        "kwargs": repr(spec.kwargs) if spec.kwargs else None,
        "repeats": -1,
        "cluster": spec.cluster,
    }


def first_run(offset: int, now=None):
    """The first time at ``offset`` seconds past a minute after ``now``."""
    from datetime import timedelta

    from django.utils import timezone

    now = now or timezone.now()
    minute = now.replace(second=0, microsecond=0)
    at = minute + timedelta(seconds=offset)
    return at if at > now else at + timedelta(minutes=1)


def _apply(name: str, spec: ScheduleSpec, current) -> str | None:
    """Create or update one schedule row; returns ``"created"``/``"updated"``/None. A spec
    with an ``offset`` whose row runs at another second of the minute is moved to it."""
    from django_q.models import Schedule

    values = _schedule_values(spec)
    if current is None:
        if spec.offset is not None:
            values["next_run"] = first_run(spec.offset)
        Schedule.objects.create(name=name, **values)
        return "created"
    changed = any(getattr(current, k) != v for k, v in values.items())
    if spec.offset is not None and (
        current.next_run is None or current.next_run.second != spec.offset
    ):
        current.next_run = first_run(spec.offset)
        changed = True
    if changed:
        for key, value in values.items():
            setattr(current, key, value)
        current.save()
        return "updated"
    return None


def schedule_upsert(spec: ScheduleSpec) -> str | None:
    """Apply one declared schedule now (e.g. in the transaction creating its company)."""
    from django_q.models import Schedule

    current = Schedule.objects.select_for_update().filter(name=spec.full_name).first()
    return _apply(spec.full_name, spec, current)


def schedule_once(*, name: str, func: str, kwargs: dict, at, cluster: str | None = None) -> None:
    """Run ``func(**kwargs)`` once at ``at``: one q2 ``ONCE`` schedule per ``name``, moved to
    ``at`` if it exists (q2 deletes it once fired). ``name`` must not start with
    :data:`SCHEDULE_PREFIX`: :func:`sync_schedules` would delete it."""
    from django_q.models import Schedule

    if name.startswith(SCHEDULE_PREFIX):
        raise ValueError(f"one-off schedule names may not start with {SCHEDULE_PREFIX!r}")
    if not Schedule.objects.filter(name=name).update(next_run=at):
        Schedule.objects.create(
            name=name,
            func=func,
            kwargs=repr(kwargs),
            schedule_type=Schedule.ONCE,
            repeats=-1,
            cluster=cluster,
            next_run=at,
        )


def sync_schedules() -> SyncReport:
    from django.db import transaction
    from django_q.models import Schedule

    wanted = {spec.full_name: spec for spec in declared_schedules().values()}
    created, updated, deleted = [], [], []
    with transaction.atomic():
        existing = {
            s.name: s
            for s in Schedule.objects.select_for_update().filter(name__startswith=SCHEDULE_PREFIX)
        }
        for name, spec in sorted(wanted.items()):
            outcome = _apply(name, spec, existing.pop(name, None))
            if outcome == "created":
                created.append(name)
            elif outcome == "updated":
                updated.append(name)
        for name, stale in sorted(existing.items()):
            stale.delete()
            deleted.append(name)
    return SyncReport(tuple(created), tuple(updated), tuple(deleted))
