import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from persistence.models import ClusterHeartbeat
from persistence.services.system import cluster_heartbeat_record
from synthorg.health import NO_LLM, llm_banner, versions_report

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
    ClusterHeartbeat.objects.create(cluster="synthorg", beat_at=timezone.now() - timedelta(hours=1))
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


@pytest.mark.django_db
def test_healthz_reports_server_and_pgvector_versions_against_the_requirement(client):
    cluster_heartbeat_record()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('server_version'), "
            "(SELECT extversion FROM pg_extension WHERE extname = 'vector'), current_user"
        )
        server_version, vector_version, role = cursor.fetchone()
    body = client.get("/healthz").json()
    assert body["checks"]["versions"] == {
        "ok": True,
        "postgres": server_version,
        "pgvector": vector_version,
        "required": {"postgres": ">= 15", "pgvector": ">= 0.8"},
    }
    assert body["checks"]["vector"] == {"ok": True, "version": vector_version}
    assert body["checks"]["app_role"] == {"ok": True, "name": role, "superuser": False}


@pytest.mark.parametrize(
    ("postgres", "pgvector", "ok"),
    [
        ("18.6", "0.8.6", True),
        ("15.0", "0.8.0", True),
        ("17.2 (Debian 17.2-1)", "0.10.0", True),
        ("14.12", "0.8.1", False),
        ("16.2", "0.6.2", False),
        ("18.1", "0.7.4", False),
    ],
)
def test_versions_below_the_requirement_are_flagged(postgres, pgvector, ok):
    report = versions_report(postgres, pgvector, role="app", superuser=False)
    assert report["versions"]["ok"] is ok
    assert report["database"] == {"ok": True}


def test_a_superuser_app_role_is_flagged():
    report = versions_report("18.6", "0.8.6", role="postgres", superuser=True)
    assert report["app_role"] == {"ok": False, "name": "postgres", "superuser": True}
    assert report["versions"]["ok"] is True


@pytest.mark.django_db
def test_healthz_says_which_llm_is_configured_or_what_runs_without_one(client, settings):
    settings.SYNTHORG_LLM = {**settings.SYNTHORG_LLM, "BASE_URL": "", "MODEL": ""}
    assert client.get("/healthz").json()["checks"]["llm"] == {
        "ok": True,
        "configured": False,
        "note": NO_LLM,
    }
    settings.SYNTHORG_LLM = {
        **settings.SYNTHORG_LLM,
        "BASE_URL": "http://llm.internal:8080/v1",
        "API_KEY": "sk-secret",
        "MODEL": "",
    }
    body = client.get("/healthz").json()
    assert body["checks"]["llm"] == {"ok": True, "configured": True, "model": None}
    assert "llm.internal" not in str(body) and "sk-secret" not in str(body)
    settings.SYNTHORG_LLM = {**settings.SYNTHORG_LLM, "MODEL": "qwen2.5-7b-instruct"}
    assert client.get("/healthz").json()["checks"]["llm"]["model"] == "qwen2.5-7b-instruct"


def test_the_startup_banner_names_the_llm_or_says_what_none_disables(settings):
    settings.SYNTHORG_LLM = {**settings.SYNTHORG_LLM, "BASE_URL": "", "MODEL": ""}
    line, warn = llm_banner()
    assert warn and line.startswith("LLM: none. No LLM configured (SYNTHORG_LLM_BASE_URL)")
    settings.SYNTHORG_LLM = {**settings.SYNTHORG_LLM, "BASE_URL": "https://llm.example/v1"}
    assert llm_banner() == (
        "LLM: the first model the endpoint lists (SYNTHORG_LLM_BASE_URL)",
        False,
    )
    settings.SYNTHORG_LLM = {**settings.SYNTHORG_LLM, "MODEL": "qwen2.5-7b-instruct"}
    assert llm_banner() == ("LLM: qwen2.5-7b-instruct (SYNTHORG_LLM_BASE_URL)", False)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("cluster", "check"), [("synthorg", "q2_cluster"), ("llm", "q2_llm_cluster")]
)
def test_a_cluster_is_healthy_as_soon_as_its_workers_start(client, monkeypatch, cluster, check):
    """A q2 worker starting (django-q2's ``post_spawn``, sent in the worker process) records
    its cluster's heartbeat: no minute of "no heartbeat recorded" after ``make run``."""
    from django_q.conf import Conf
    from django_q.signals import post_spawn

    assert client.get("/healthz").json()["checks"][check]["ok"] is False
    monkeypatch.setattr(Conf, "CLUSTER_NAME", cluster)
    post_spawn.send(sender="django_q", proc_name="Process-1:1")
    assert list(ClusterHeartbeat.objects.values_list("cluster", flat=True)) == [cluster]
    assert client.get("/healthz").json()["checks"][check]["ok"] is True
