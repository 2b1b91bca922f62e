"""A small fine-tune fixture: memories with crafted base vectors, and a query embedder whose
queries differ from their answers by a learnable "query style".

Each memory's vector is a shared centre, its own direction and a component along ``style``;
its query (the memory's ``context``, ``"q:<n>"``) has the same centre and own direction but
the style component reversed and amplified, so the base model ranks the wrong memories
first and a linear map on the query side can undo it.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from django.utils import timezone

from memory.core.models import Memory
from memory.finetune.query_adapter import normalize_rows
from synthorg.embedding.minilm_onnx import MINILM_EMBEDDER_ID

DIMS = 384


def crafted(pairs: int, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centre = normalize_rows(rng.normal(size=(1, DIMS)))[0]
    style = normalize_rows(rng.normal(size=(1, DIMS)))[0]
    own = normalize_rows(rng.normal(size=(pairs, DIMS)))
    docs = normalize_rows(centre + 0.5 * own + 0.6 * np.outer(rng.normal(size=pairs), style))
    queries = normalize_rows(
        centre
        + 0.5 * own
        - 1.8 * np.outer(docs @ style, style)
        + 0.06 * rng.normal(size=(pairs, DIMS))
    )
    return docs.astype(np.float32), queries.astype(np.float32)


class QueryEmbedder:
    """Embeds ``"q:<n>"`` as the fixture's query ``n`` (``"d:<n>"`` as document ``n``: a
    query the base model already answers perfectly) under the default embedder's id."""

    embedder_id = MINILM_EMBEDDER_ID
    dims = DIMS

    def __init__(self, queries: np.ndarray, docs: np.ndarray | None = None) -> None:
        self.queries = queries
        self.docs = docs
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        table = {"q": self.queries, "d": self.docs}
        return np.vstack([table[t.split(":")[0]][int(t.split(":")[1])] for t in texts])

    def embed_one(self, text):
        return self.embed([text])[0]


def store_pairs(agent, docs: np.ndarray, *, offset: int = 0) -> list[Memory]:
    """One memory per fixture document (context ``"q:<n>"``), stored as of the default
    embedder."""
    now = timezone.now()
    rows = [
        Memory(
            company=agent.company,
            agent=agent,
            category="episodic",
            content=f"turn {offset + n}",
            context=f"q:{offset + n}",
            created_at=now - timedelta(minutes=n),
            updated_at=now,
            embedding=docs[n],
            embedder_id=MINILM_EMBEDDER_ID,
            embedding_status="ready",
        )
        for n in range(len(docs))
    ]
    return Memory.objects.bulk_create(rows)


def enable(company, tmp_path, settings, **overrides) -> None:
    from persistence.services.companies import company_config_set

    settings.SYNTHORG_TENANT_FILES_DIR = tmp_path
    fine_tune = {
        "enabled": True,
        "checkpoint_path": "adapters",
        "base_model": MINILM_EMBEDDER_ID,
        "epochs": 10,
        "min_gain": 0.05,
        "held_out_share": 0.25,
        **overrides,
    }
    if not fine_tune["enabled"]:
        # off, fine-tuning's other keys would change nothing: they are refused
        # (config_value_needs_setting), so a company that turns it off drops them
        assert overrides.keys() == {"enabled"}, "set only enabled=False to turn it off"
        fine_tune = {"enabled": False}
    company_config_set(company=company, data={"memory": {"fine_tune": fine_tune}})
