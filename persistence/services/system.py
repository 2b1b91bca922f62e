from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.utils import timezone

from persistence.models import ClusterHeartbeat


def cluster_heartbeat_record(*, cluster: str | None = None) -> datetime:
    """Record that ``cluster`` (default: the default q2 cluster's name) runs work now."""
    now = timezone.now()
    ClusterHeartbeat.objects.update_or_create(
        cluster=cluster or settings.Q_CLUSTER["name"], defaults={"beat_at": now}
    )
    return now
