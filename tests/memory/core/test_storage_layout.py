"""Memory rows are stored whole below a page (migration memory 0013): the dense leg reads
vectors and filter columns without TOAST lookups; only a row too long for a page moves its
long text out, never its vector or the columns searches filter on."""

import numpy as np
import pytest
from django.db import connection

from memory.core.domain import MemoryStoreRequest
from memory.core.services.store import memory_store_batch

pytestmark = pytest.mark.django_db

OUT_OF_LINE = ("embedding", "embedder_id", "namespace", "category", "content", "context")


class _Embedder:
    embedder_id = "layout-test"
    dims = 384

    def embed(self, texts):
        rng = np.random.default_rng(len(texts))
        vectors = rng.normal(size=(len(texts), self.dims)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_one(self, text):
        return self.embed([text])[0]


def _out_of_line(memory_id) -> dict[str, bool]:
    exprs = ", ".join(f"pg_column_toast_chunk_id(m.{c}) IS NOT NULL" for c in OUT_OF_LINE)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {exprs} FROM memory_memory m WHERE m.id = %s", [memory_id])
        return dict(zip(OUT_OF_LINE, cursor.fetchone(), strict=True))


def _store(caller, content: str, context: str):
    (result,) = memory_store_batch(
        agent=caller.agent,
        requests=[MemoryStoreRequest(content=content, context=context, category="episodic")],
        embedder=_Embedder(),
        deduplicate=False,
    )
    return result.id


def test_a_row_that_fits_a_page_is_stored_whole(caller):
    # 2.6 kB with the vector: above PostgreSQL's default 2 kB TOAST threshold
    memory_id = _store(caller, "deploy friday " * 30, "the release train " * 30)
    assert _out_of_line(memory_id) == dict.fromkeys(OUT_OF_LINE, False)


def test_a_long_row_moves_its_text_out_never_its_vector_or_filter_columns(caller):
    rng = np.random.default_rng(1)
    # incompressible text: the toaster has to move it out of line
    words = [f"w{n}" for n in rng.integers(0, 10**9, size=1500)]
    memory_id = _store(caller, " ".join(words), "context")
    assert _out_of_line(memory_id) == {**dict.fromkeys(OUT_OF_LINE, False), "content": True}
