"""``GET /healthz``: database, pgvector, embedder and worker-cluster status.

200 only when the database is usable; the other components are reported so an operator
can see a degraded service (search falls back to BM25 without an embedder, schedules do
not run without a cluster) without the load balancer pulling a working node.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import connection
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

logger = logging.getLogger(__name__)

HEARTBEAT_STALE_AFTER = timedelta(minutes=3)


def _check_database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
    except Exception as exc:  # any failure means the database is not usable
        logger.warning("health: database check failed", exc_info=True)
        return {
            "database": {"ok": False, "error": str(exc).strip().splitlines()[0][:300]},
            "vector": {"ok": False, "error": "database unavailable"},
        }
    vector = {"ok": True, "version": row[0]} if row else {"ok": False, "error": "not installed"}
    return {"database": {"ok": True}, "vector": vector}


def _check_embedder() -> dict:
    from synthorg.embedding import default_embedder

    try:
        embedder = default_embedder()
        return {
            "ok": embedder.is_ready(),
            "id": embedder.embedder_id,
            "loaded": embedder.is_ready(),
        }
    except Exception as exc:
        return {"ok": False, "error": str(exc)[:300]}


def _check_cluster() -> dict:
    from persistence.models import ClusterHeartbeat

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


@require_GET
def healthz(request):
    checks = _check_database()
    checks["embedder"] = _check_embedder()
    checks["q2_cluster"] = (
        _check_cluster()
        if checks["database"]["ok"]
        else {"ok": False, "error": "database unavailable"}
    )
    usable = checks["database"]["ok"] and checks["vector"]["ok"]
    all_ok = all(check["ok"] for check in checks.values())
    status = "ok" if all_ok else ("degraded" if usable else "unavailable")
    return JsonResponse({"status": status, "checks": checks}, status=200 if usable else 503)
