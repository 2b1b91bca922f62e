"""LLM work runs on its own q2 cluster and queue (``synthorg.schedules.LLM_CLUSTER``), so a
hanging LLM endpoint holds none of the default cluster's workers: webhooks, maintenance and
re-embedding keep running."""

import pytest
from django.core.management import call_command
from django_q.models import OrmQ, Schedule

from persistence.health import cluster_health, llm_cluster_health
from persistence.services.system import cluster_heartbeat_record
from synthorg.jobs.registry import DISPATCH_TASK
from tests.persistence.factories import CompanyFactory

pytestmark = pytest.mark.django_db

LLM_FUNCS = {
    "memory.procedural.evolver.tasks.run_company_evolver",
    "memory.ingestion.tasks.dream_company",
}
#: the job kinds whose kernel schedule (``jobs-<kind>``) runs on the LLM cluster
LLM_KINDS = {
    "procedural.capture",
    "evolver.draft",
    "evolver.cycle",
    "ingestion.extraction",
    "ingestion.dream_request",
    "ingestion.dream",
    "finetune.synthesis",
}


def test_llm_schedules_run_on_the_llm_cluster_and_the_rest_on_the_default_one():
    CompanyFactory(config={"memory": {"procedural": {"evolver": {"enabled": True}}}})
    call_command("sync_schedules", verbosity=0)
    rows = {
        s.name: (s.func, s.cluster, s.args)
        for s in Schedule.objects.filter(name__startswith="synthorg:")
    }
    llm = {name for name, (func, cluster, _) in rows.items() if cluster == "llm"}
    default = {name for name, (func, cluster, _) in rows.items() if cluster is None}
    assert llm | default == set(rows)
    assert {rows[name][0] for name in llm} == LLM_FUNCS | {
        DISPATCH_TASK,
        "persistence.tasks.record_cluster_heartbeat",
    }
    assert "synthorg:llm-cluster-heartbeat" in llm
    dispatches = {name: rows[name][2] for name in rows if rows[name][0] == DISPATCH_TASK}
    assert {name for name in dispatches if name in llm} == {
        f"synthorg:jobs-{kind}" for kind in LLM_KINDS
    }
    assert {name for name in dispatches if name in default} == {
        "synthorg:jobs-orgmemory.webhook",
        "synthorg:jobs-memory.reembed",
        "synthorg:jobs-finetune.run",  # CPU work: its company tasks take no LLM slot
    }
    assert all(
        args == repr((name.removeprefix("synthorg:jobs-"),)) for name, args in dispatches.items()
    )
    default_funcs = {rows[name][0] for name in default}
    assert default_funcs.isdisjoint(LLM_FUNCS)
    assert {
        DISPATCH_TASK,
        "memory.core.tasks.run_company_maintenance",
        "persistence.tasks.record_cluster_heartbeat",
    } <= default_funcs


def test_each_cluster_reports_its_own_heartbeat():
    assert llm_cluster_health() == {
        "ok": False,
        "error": "no heartbeat recorded; is `Q_CLUSTER_NAME=llm manage.py qcluster` running?",
    }
    cluster_heartbeat_record()
    assert cluster_health()["ok"] is True
    assert llm_cluster_health()["ok"] is False
    cluster_heartbeat_record(cluster="llm")
    assert llm_cluster_health()["ok"] is True
    assert llm_cluster_health()["cluster"] == "llm"


def test_an_armed_extraction_schedule_is_for_the_llm_cluster(caller):
    caller.client.post(
        "/api/v1/conversations/chat-1/messages",
        {"messages": [{"role": "user", "content": "We deploy on Fridays."}]},
        format="json",
    )
    armed = Schedule.objects.get(name__startswith="ingestion-extract:")
    assert (armed.func, armed.cluster) == ("memory.ingestion.tasks.extract_conversation", "llm")
    assert not OrmQ.objects.exists()
