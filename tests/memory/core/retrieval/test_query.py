from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from memory.core.retrieval.query import MemoryQuery


def test_defaults_and_normalisation():
    q = MemoryQuery(text="  hello ", tags=(" A", "a", "b"), namespaces=(" ns ",))
    assert q.text == "hello" and q.tags == ("a", "b") and q.namespaces == ("ns",)
    assert q.limit == 10 and q.min_relevance is None
    assert MemoryQuery(text="   ").text is None


@pytest.mark.parametrize(
    "fields",
    [
        {"limit": 0},
        {"limit": 1001},
        {"min_relevance": 1.5},
        {"tags": ("",)},
        {"categories": ("nope",)},
        {"since": datetime(2026, 1, 2, tzinfo=UTC), "until": datetime(2026, 1, 1, tzinfo=UTC)},
        {"since": datetime(2026, 1, 2)},  # naive
        {"unknown": 1},
    ],
)
def test_invalid(fields):
    with pytest.raises(ValidationError):
        MemoryQuery(**fields)
