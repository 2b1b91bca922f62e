"""Procedural learning gives the fine-tune its lesson pairs (activation condition → lesson)
through the core's extension point."""

from __future__ import annotations

from django.utils import timezone

from memory.core.extensions import training_pair_sources
from memory.finetune.selectors import mine_pairs, pair_counts
from memory.procedural.models import ProceduralLesson
from memory.procedural.selectors import lesson_training_pairs
from persistence.selectors.config import company_config
from synthorg.embedding.minilm_onnx import MINILM_EMBEDDER_ID
from tests.conftest import make_agent_caller
from tests.memory.finetune.data import crafted, store_pairs
from tests.persistence.factories import CompanyFactory


def _lesson(memory, condition: str) -> ProceduralLesson:
    memory.category = "procedural"
    memory.save(update_fields=["category"])
    return ProceduralLesson.objects.create(
        memory=memory, company=memory.company, origin="failure", skill_name="deploy",
        discovery=memory.content, condition=condition, action="roll back first",
        rationale="r", method="rule", created_at=timezone.now(),
    )  # fmt: skip


def test_lessons_are_a_registered_pair_source_and_mined_with_redaction(caller):
    assert training_pair_sources()["lesson"] is lesson_training_pairs
    memories = store_pairs(caller.agent, crafted(3)[0])
    _lesson(memories[0], "when the deploy of billing fails with token=sk-abcdef0123456789abcdef")
    _lesson(memories[1], "   ")  # a blank condition is no query
    other = make_agent_caller(company=CompanyFactory())
    _lesson(store_pairs(other.agent, crafted(1)[0])[0], "someone else's lesson")

    assert pair_counts(caller.company, MINILM_EMBEDDER_ID) == {
        "turn": 3,
        "lesson": 1,
        "extracted": 0,
        "org_fact": 0,
        "labelled": 0,
    }
    config = company_config(caller.company).memory.fine_tune
    pairs = mine_pairs(caller.company, MINILM_EMBEDDER_ID, config, max_pairs=100)
    assert pairs.counts == {
        "turn": 3, "lesson": 1, "extracted": 0, "org_fact": 0, "labelled": 0, "synthetic": 0,
    }  # fmt: skip
    lesson_query = pairs.queries[3]
    assert lesson_query.startswith("when the deploy of billing fails with token=")
    assert "sk-abcdef0123456789abcdef" not in lesson_query
    assert sum(pairs.redactions.values()) == 1
    assert pairs.doc_ids[pairs.positives[3]] == memories[0].pk
    assert len(pairs.doc_ids) == 3  # only this company's agent's memories
