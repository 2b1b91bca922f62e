import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from persistence.models import ClusterHeartbeat
from persistence.services.system import cluster_heartbeat_record

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_healthz_reports_components(client):
    cluster_heartbeat_record()
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["checks"]["database"] == {"ok": True}
    assert body["checks"]["vector"]["ok"] is True
    assert body["checks"]["q2_cluster"]["ok"] is True
    assert set(body["checks"]["embedder"]) >= {"ok", "id"}


@pytest.mark.django_db
def test_healthz_stale_heartbeat_is_degraded_but_200(client):
    ClusterHeartbeat.objects.create(cluster="old", beat_at=timezone.now() - timedelta(hours=1))
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["checks"]["q2_cluster"]["ok"] is False
    assert response.json()["status"] == "degraded"


def test_healthz_with_database_down_is_503():
    """A process whose database is unreachable answers 503 and says why."""
    script = (
        "import django, json; django.setup();"
        "from django.test import Client;"
        "r = Client().get('/healthz', HTTP_HOST='localhost');"
        "print(json.dumps({'status': r.status_code, 'body': r.json()}))"
    )
    env = dict(
        os.environ,
        DATABASE_URL="postgresql://nobody@127.0.0.1:9/nowhere",
        DJANGO_SETTINGS_MODULE="synthorg.settings",
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == 503
    assert result["body"]["status"] == "unavailable"
    assert result["body"]["checks"]["database"]["ok"] is False
    assert result["body"]["checks"]["q2_cluster"] == {"ok": False, "error": "database unavailable"}


def test_manage_py_reports_unreachable_database_without_traceback():
    env = dict(os.environ, DATABASE_URL="postgresql://nobody@127.0.0.1:9/nowhere")
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot reach the database.")
    assert "Traceback" not in done.stderr
