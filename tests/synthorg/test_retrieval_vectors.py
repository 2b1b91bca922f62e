"""Query-vector literals: exact float32 round trip through pgvector's parser."""

import numpy as np
import pytest
from django.db import connection

from synthorg.retrieval.vectors import vector_literal


def test_the_literal_holds_every_float32_component_exactly():
    rng = np.random.default_rng(3)
    vectors = [
        rng.normal(size=384).astype(np.float32),
        (rng.normal(size=1536) * 1e-7).astype(np.float32),  # exponents
        np.array([1.0, -0.0, 3.4028235e38, 1.1754944e-38, 0.1], dtype=np.float32),
    ]
    for vector in vectors:
        literal = vector_literal(vector)
        assert literal.startswith("[") and literal.endswith("]")
        parsed = np.array([float(x) for x in literal[1:-1].split(",")], dtype=np.float32)
        assert parsed.tobytes() == vector.tobytes()


@pytest.mark.django_db
def test_pgvector_parses_the_literal_to_the_same_float32s():
    vector = np.random.default_rng(4).normal(size=384).astype(np.float32)
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::vector::real[]", [vector_literal(vector)])
        (back,) = cursor.fetchone()
    assert np.array(back, dtype=np.float32).tobytes() == vector.tobytes()
    assert vector_literal(np.zeros(0, dtype=np.float32)) == "[]"
