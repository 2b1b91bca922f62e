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
