from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from persistence.models import ClusterHeartbeat

logger = logging.getLogger(__name__)


def cluster_heartbeat_record(*, cluster: str | None = None) -> datetime:
    """Record that ``cluster`` (default: the default q2 cluster's name) runs work now."""
    now = timezone.now()
    ClusterHeartbeat.objects.update_or_create(
        cluster=cluster or settings.Q_CLUSTER["name"], defaults={"beat_at": now}
    )
    return now


def cluster_heartbeat_on_spawn(sender=None, proc_name: str = "", **kwargs) -> None:
    """django-q2's ``post_spawn`` (sent in each worker process as it starts): a heartbeat for
    the cluster the process belongs to, so ``/healthz`` sees a cluster the moment its workers
    are up instead of at the heartbeat schedule's first run (up to a minute later). A
    failure is logged; the schedule beats again every minute."""
    from django_q.conf import Conf

    try:
        cluster_heartbeat_record(cluster=Conf.CLUSTER_NAME)
    except Exception:
        logger.warning("heartbeat at worker start failed (%s)", proc_name, exc_info=True)
