"""Consolidation strategies plan which memories fold into which summary."""

import uuid
from datetime import UTC, datetime, timedelta

from memory.core.consolidation.abstractive import AbstractiveSummarizer
from memory.core.consolidation.density import DensityClassifier
from memory.core.consolidation.extractive import ExtractivePreserver
from memory.core.consolidation.models import ArchivalMode, ConsolidationEntry
from memory.core.consolidation.strategies import DualModeStrategy, LLMStrategy, SimpleStrategy
from synthorg.enums import MemoryCategory
from synthorg.llm import OpenAICompatibleChatClient
from tests.support.openai_server import FakeOpenAIServer, ScriptedResponse, error_payload

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entry(content, *, category=MemoryCategory.EPISODIC, namespace="default", age=0, conf=1.0):
    return ConsolidationEntry(
        id=uuid.uuid4(),
        namespace=namespace,
        category=category,
        content=content,
        created_at=T0 + timedelta(days=age),
        confidence=conf,
    )


def test_simple_groups_by_namespace_and_category_and_keeps_the_most_relevant():
    best = entry("the decisive one", age=1, conf=1.0)
    older_same_conf = entry("older same confidence", age=0, conf=1.0)
    others = [entry(f"note {i}", age=2 + i, conf=0.5) for i in range(3)]
    small_group = [entry("semantic a", category=MemoryCategory.SEMANTIC) for _ in range(2)]
    other_ns = [entry("ns b", namespace="b") for _ in range(3)]
    plan = SimpleStrategy(group_threshold=3).plan(
        [best, older_same_conf, *others, *small_group, *other_ns]
    )
    assert plan.errors == []
    assert [(g.namespace, g.category, len(g.removed)) for g in plan.groups] == [
        ("b", "episodic", 2),
        ("default", "episodic", 4),
    ]
    group = plan.groups[1]
    assert group.kept == best
    assert {e.id for e in group.removed} == {older_same_conf.id, *(e.id for e in others)}
    assert group.summary.splitlines() == [
        "Consolidated 4 memories:",
        "- [2026-01-01] older same confidence",
        "- [2026-01-03] note 0",
        "- [2026-01-04] note 1",
        "- [2026-01-05] note 2",
    ]
    assert group.mode is ArchivalMode.EXTRACTIVE
    assert len(plan.removed_ids) == 6


def test_large_groups_are_chunked():
    entries = [entry(f"n{i}", age=i) for i in range(12)]
    plan = SimpleStrategy(group_threshold=3, max_group_size=5).plan(entries)
    # chunks of 5, 5, 2 → the last is below the threshold and left alone
    assert [len(g.removed) for g in plan.groups] == [4, 4]


def test_dual_mode_routes_dense_groups_to_extraction_and_sparse_to_the_llm():
    dense = [
        entry(f'{{"build": {i}, "sha": "9f2c1e7a{i}b"}}', category="semantic") for i in range(3)
    ]
    sparse = [entry(f"Talked with the team about plan number {i}.") for i in range(3)]
    with FakeOpenAIServer(chat_reply="Team discussed plans.") as server:
        client = OpenAICompatibleChatClient(server.base_url, "m", sleep=lambda _: None)
        strategy = DualModeStrategy(
            classifier=DensityClassifier(),
            preserver=ExtractivePreserver(),
            summarizer=AbstractiveSummarizer(provider=client, model="small"),
        )
        plan = strategy.plan(dense + sparse)
    by_category = {g.category: g for g in plan.groups}
    assert by_category["semantic"].mode is ArchivalMode.EXTRACTIVE
    assert by_category["semantic"].summary.startswith("[extractive] ")
    assert by_category["episodic"].mode is ArchivalMode.ABSTRACTIVE
    assert by_category["episodic"].summary == "Team discussed plans."
    assignments = by_category["episodic"].mode_assignments
    assert {a.mode for a in assignments} == {ArchivalMode.ABSTRACTIVE} and len(assignments) == 2


def test_llm_strategy_falls_back_to_concatenation_and_isolates_rejections():
    group_a = [entry(f"a{i}", age=i) for i in range(3)]
    group_b = [entry(f"b{i}", category=MemoryCategory.SOCIAL) for i in range(3)]
    with FakeOpenAIServer() as server:
        server.enqueue(
            server.CHAT_COMPLETIONS,
            ScriptedResponse(status=500, json=error_payload("boom")),
            ScriptedResponse(status=403, json=error_payload("forbidden")),
        )
        client = OpenAICompatibleChatClient(server.base_url, "m", max_retries=0)
        plan = LLMStrategy(summarizer=AbstractiveSummarizer(provider=client)).plan(
            group_a + group_b
        )
    assert [g.method for g in plan.groups] == ["concatenation"]
    assert plan.groups[0].summary.splitlines()[0] == "Consolidated 2 memories:"
    assert len(plan.errors) == 1
    assert plan.errors[0].startswith("consolidation of default/social skipped: LLMRequestError")
