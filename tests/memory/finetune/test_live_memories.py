"""Fine-tuning trains on live memories only (``Memory.objects.live``): an expired memory, like
a superseded one, gives no pair, is no document of the pool and is not sampled for synthetic
questions; one that expires later is still live."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.core.models import Memory
from memory.finetune.selectors import mine_pairs, pair_counts
from memory.finetune.synthetic import sample_memories
from persistence.selectors.config import company_config
from synthorg.embedding.minilm_onnx import MINILM_EMBEDDER_ID
from tests.memory.finetune.data import crafted, store_pairs

pytestmark = pytest.mark.django_db


@pytest.fixture
def memories(caller):
    """Four memories with turn pairs: ``live``, ``expired`` a second ago, ``superseded``, and
    ``expiring`` in an hour."""
    rows = store_pairs(caller.agent, crafted(4)[0])
    now = timezone.now()
    live, expired, superseded, expiring = rows
    Memory.objects.filter(pk=expired.pk).update(expires_at=now - timedelta(seconds=1))
    Memory.objects.filter(pk=superseded.pk).update(superseded_at=now)
    Memory.objects.filter(pk=expiring.pk).update(expires_at=now + timedelta(hours=1))
    return {"live": live, "expired": expired, "superseded": superseded, "expiring": expiring}


def test_an_expired_memory_gives_no_pair_and_is_not_in_the_pool(caller, memories):
    assert pair_counts(caller.company, MINILM_EMBEDDER_ID)["turn"] == 2
    config = company_config(caller.company).memory.fine_tune
    pairs = mine_pairs(caller.company, MINILM_EMBEDDER_ID, config, max_pairs=100)
    live, expiring = memories["live"], memories["expiring"]
    assert pairs.counts["turn"] == 2
    assert sorted(pairs.queries) == sorted([live.context, expiring.context])
    assert sorted(pairs.doc_ids) == sorted([live.pk, expiring.pk])
    assert sorted(pairs.doc_ids[p] for p in pairs.positives) == sorted([live.pk, expiring.pk])


def test_an_expired_memory_is_not_sampled_for_synthetic_questions(caller, memories):
    live, expiring = memories["live"], memories["expiring"]
    sampled = sample_memories(caller.company, MINILM_EMBEDDER_ID, limit=10, seed=0)
    assert sampled == sorted([(live.pk, live.content), (expiring.pk, expiring.content)])
