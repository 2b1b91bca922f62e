"""The TypeScript client (clients/typescript, npm ``synthorg-memory``) against the real server:
the product's ASGI app under uvicorn on a free port (``live_server_url``), agents with real
keys, and node's test runner over the client's suite (``clients/typescript/test/``) with them
in ``SYNTHORG_TS_FIXTURE``. The suite reports the ids it wrote; this test checks the database
(what each agent wrote, and that the others' data is untouched)."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from memory.core.models import MemoryRevision
from memory.core.models.memory import Memory
from memory.ingestion.models import Conversation, DreamRequest
from memory.procedural.models import ExecutionReport
from orgmemory.approval_models import ApprovalItem
from orgmemory.models import OrgFact
from tests.clients.test_python_client import CONTENT, correct, no_llm  # noqa: F401
from tests.synthorg.test_mcp_server import committed, live_server_url  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "typescript"
TEST_FILES = sorted((CLIENT / "test").glob("*.test.js"))


def node() -> str:
    path = shutil.which("node")
    assert path is not None, "node (20 or later) runs the TypeScript client's tests"
    return path


def run_suite(fixture: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, "SYNTHORG_TS_FIXTURE": json.dumps(fixture)}
    return subprocess.run(
        [node(), "--test", "--test-reporter=tap", *map(str, TEST_FILES)],
        cwd=CLIENT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def declared_tests() -> int:
    return sum(len(re.findall(r"^test\(", path.read_text(), re.M)) for path in TEST_FILES)


def test_the_typescript_suite_passes_against_the_server(
    live_server_url,  # noqa: F811
    committed,  # noqa: F811
    no_llm,  # noqa: F811
    tmp_path,
):
    round_trip = committed.agent()
    errors = committed.agent()
    outsider = committed.agent()
    foreign = committed.store(outsider, "Another company's secret.")
    limited = committed.agent(config={"memory": {"dream": {"agent_request_interval_seconds": 1}}})
    pager = committed.agent()
    ids = [committed.store(pager, f"Fact number {i} about billing.") for i in range(5)]
    correct(pager.agent, ids[0], *[(f"Version {i}", f"r{i}") for i in range(3)])
    newest_first = Memory.objects.filter(agent=pager.agent).order_by("-created_at", "-id")
    resources = committed.agent()
    resources.agent.seniority = "senior"  # may publish conventions (the default write rules)
    resources.agent.save(update_fields=["seniority"])
    fixture = {
        "url": live_server_url,
        "reportDir": str(tmp_path),
        "roundTrip": {"key": round_trip.raw_key, "agentId": round_trip.agent.pk},
        "errors": {"key": errors.raw_key, "foreignMemory": foreign},
        "limited": {"key": limited.raw_key},
        "pager": {
            "key": pager.raw_key,
            "newestFirst": [str(pk) for pk in newest_first.values_list("pk", flat=True)],
            "revised": ids[0],
            "previousContents": ["Fact number 0 about billing.", "Version 0", "Version 1"],
        },
        "resources": {"key": resources.raw_key},
    }

    result = run_suite(fixture)

    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    summary = dict(re.findall(r"^# (\w+) (\d+)$", result.stdout, re.M))
    count = str(declared_tests())
    assert {k: summary[k] for k in ("tests", "pass", "fail", "cancelled", "skipped", "todo")} == {
        "tests": count, "pass": count, "fail": "0", "cancelled": "0", "skipped": "0", "todo": "0",
    }  # fmt: skip
    reported = {path.stem: json.loads(path.read_text()) for path in tmp_path.glob("*.json")}
    assert sorted(reported) == ["limited", "resources", "round-trip"]

    # the round trip: one memory left, as the client last wrote it; the deleted one is gone
    (kept,) = Memory.objects.filter(agent=round_trip.agent)
    assert str(kept.pk) == reported["round-trip"]["kept"]
    assert (kept.content, kept.tags, kept.expires_at) == (CONTENT, ["deploy"], None)
    assert not Memory.objects.filter(pk=reported["round-trip"]["deleted"]).exists()

    # the refused calls wrote nothing; the other company's memory is untouched
    assert not Memory.objects.filter(agent=errors.agent).exists()
    assert Memory.objects.get(pk=foreign).content == "Another company's secret."

    dreams = DreamRequest.objects.filter(agent=limited.agent).values_list("pk", flat=True)
    assert sorted(str(pk) for pk in dreams) == sorted(reported["limited"]["dreams"])
    assert not DreamRequest.objects.exclude(agent=limited.agent).exists()

    # reading pages changed nothing
    assert Memory.objects.filter(agent=pager.agent).count() == 5
    assert MemoryRevision.objects.filter(memory_id=ids[0]).count() == 3

    made = reported["resources"]
    assert (made["staleCode"], made["earlyCode"]) == (
        "fact_version_conflict", "approval_not_approved",
    )  # fmt: skip
    assert not Memory.objects.filter(pk=made["retracted"]).exists()
    fact = OrgFact.objects.get(company=resources.company, fact_id=made["fact"])
    assert (fact.content, fact.retracted_at is not None) == (
        "Branches are named after the ticket id.", True,
    )  # fmt: skip
    operations = fact.operations.order_by("version").values_list("version", "operation_type")
    assert [op for _, op in operations] == ["PUBLISH", "PUBLISH", "RETRACT"]
    execution = ExecutionReport.objects.get(pk=made["execution"])
    assert (execution.agent, execution.outcome, execution.task_title) == (
        resources.agent, "failed", "Deploy billing",
    )  # fmt: skip
    item = ApprovalItem.objects.get(pk=made["approval"])
    assert (item.requester_agent, item.status, item.action_type) == (
        resources.agent, "pending", "deploy",
    )  # fmt: skip
    conversation = Conversation.objects.get(agent=resources.agent)
    assert conversation.external_id == "chat-7"
    assert conversation.messages.count() == 2
