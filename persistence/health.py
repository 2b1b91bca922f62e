"""The q2 cluster's part of ``/healthz`` (registered in ``PersistenceConfig.ready``).

Schedules do not run without a cluster; ``/healthz`` reports it so an operator sees a
degraded service without the load balancer pulling a working node.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from persistence.models import ClusterHeartbeat
from synthorg.schedules import LLM_CLUSTER

HEARTBEAT_STALE_AFTER = timedelta(minutes=3)


def cluster_health() -> dict:
    """``/healthz``'s ``q2_cluster``: the default q2 cluster's newest heartbeat."""
    return _heartbeat_health(settings.Q_CLUSTER["name"], "manage.py qcluster")


def llm_cluster_health() -> dict:
    """``/healthz``'s ``q2_llm_cluster``: the LLM cluster's newest heartbeat (captures,
    extraction, dream and the evolver wait while it is down)."""
    return _heartbeat_health(LLM_CLUSTER, "Q_CLUSTER_NAME=llm manage.py qcluster")


def _heartbeat_health(cluster: str, command: str) -> dict:
    try:
        beat = ClusterHeartbeat.objects.filter(cluster=cluster).first()
    except Exception as exc:
        return {"ok": False, "error": str(exc).strip().splitlines()[0][:300]}
    if beat is None:
        return {"ok": False, "error": f"no heartbeat recorded; is `{command}` running?"}
    age = timezone.now() - beat.beat_at
    return {
        "ok": age <= HEARTBEAT_STALE_AFTER,
        "cluster": beat.cluster,
        "last_heartbeat": beat.beat_at.isoformat(),
        "age_seconds": int(age.total_seconds()),
    }
