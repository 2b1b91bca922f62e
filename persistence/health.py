"""The q2 cluster's part of ``/healthz`` (registered in ``PersistenceConfig.ready``).

Schedules do not run without a cluster; ``/healthz`` reports it so an operator sees a
degraded service without the load balancer pulling a working node.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from persistence.models import ClusterHeartbeat

HEARTBEAT_STALE_AFTER = timedelta(minutes=3)


def cluster_health() -> dict:
    """``/healthz``'s ``q2_cluster``: the newest heartbeat the q2 cluster recorded."""
    try:
        beat = ClusterHeartbeat.objects.order_by("-beat_at").first()
    except Exception as exc:
        return {"ok": False, "error": str(exc).strip().splitlines()[0][:300]}
    if beat is None:
        return {"ok": False, "error": "no heartbeat recorded; is `manage.py qcluster` running?"}
    age = timezone.now() - beat.beat_at
    return {
        "ok": age <= HEARTBEAT_STALE_AFTER,
        "cluster": beat.cluster,
        "last_heartbeat": beat.beat_at.isoformat(),
        "age_seconds": int(age.total_seconds()),
    }
