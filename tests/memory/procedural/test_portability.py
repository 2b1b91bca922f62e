"""Execution reports in export (the agent's own, redacted) and erasure (retained)."""

from __future__ import annotations

import pytest

from memory.core.models.memory import Memory
from memory.procedural.models import ExecutionCapture, ExecutionReport
from memory.procedural.portability import export_execution_reports
from memory.procedural.tasks import capture_execution_report
from persistence.services.erasure import agent_erase
from tests.memory.procedural.conftest import FAILED_REPORT

pytestmark = pytest.mark.django_db


def test_export_and_erasure(caller, peer, llm_server):
    body = {**FAILED_REPORT, "recovery": "mailed ops@example.com"}
    report_id = caller.client.post("/api/v1/executions", body, format="json").json()["id"]
    peer.client.post("/api/v1/executions", FAILED_REPORT, format="json")
    capture_execution_report(report_id)

    [row] = export_execution_reports(caller.company, caller.agent)
    assert (row["id"], row["agent"], row["outcome"]) == (report_id, caller.agent.name, "failed")
    assert row["recovery"] == "mailed [REDACTED:email]"
    assert len(list(export_execution_reports(caller.company, None))) == 2

    report = agent_erase(agent=caller.agent)
    assert "execution reports" in report.retained
    assert ExecutionReport.objects.filter(pk=report_id).exists()  # append-only: kept
    assert not Memory.objects.filter(agent=caller.agent).exists()  # the lesson is erased
    assert ExecutionCapture.objects.get(report_id=report_id).memory_id is None


def test_compressed_experiences_are_exported_and_erased_with_the_agent(caller, peer, settings):
    """An extractive learning is the text of the agent's lesson, which erasure deletes: the
    learning goes with it (before, it outlived the erasure)."""
    from memory.procedural.models import CompressedExperience
    from memory.procedural.portability import export_compressed_experiences
    from memory.procedural.services.compression import experience_compress_run
    from persistence.services.companies import company_config_set

    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}
    company_config_set(
        company=caller.company,
        data={"memory": {"consolidation": {"experience_compressor": {"enabled": True}}}},
    )
    for agent_caller in (caller, peer):
        report_id = agent_caller.client.post(
            "/api/v1/executions", FAILED_REPORT, format="json"
        ).json()["id"]
        capture_execution_report(report_id)
    experience_compress_run(company=caller.company)
    mine = CompressedExperience.objects.get(agent=caller.agent)
    [row] = export_compressed_experiences(caller.company, caller.agent)
    assert (row["id"], row["content"], row["method"]) == (str(mine.pk), mine.content, "extractive")

    report = agent_erase(agent=caller.agent)
    assert report.counts["compressed experiences"] == 1
    assert not CompressedExperience.objects.filter(agent=caller.agent).exists()
    assert CompressedExperience.objects.filter(agent=peer.agent).count() == 1
