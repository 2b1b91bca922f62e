"""Malformed bodies get a 400 problem, never a 500."""

import pytest

from memory.core.models.memory import Memory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/api/v1/memories", "just a string"),
        ("/api/v1/memories", [1, 2]),
        ("/api/v1/memories", {"memories": "x"}),
        ("/api/v1/memories", {"memories": [{"content": "x", "category": "semantic"}], "x": 1}),
        ("/api/v1/memories", 42),
        ("/api/v1/memories/search", ["query"]),
        ("/api/v1/memories/context", None),
        ("/api/v1/shared", []),
        ("/api/v1/shared/search", {"query": 5, "tags": "a"}),
    ],
)
def test_malformed_json_bodies(caller, url, body):
    response = caller.client.post(url, body, format="json")
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert not Memory.objects.exists()


def test_invalid_json(caller):
    response = caller.client.post(
        "/api/v1/memories", data="{not json", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "malformed_request"


def test_patch_with_a_list_body(caller):
    from tests.memory.factories import MemoryFactory

    memory = MemoryFactory(agent=caller.agent)
    response = caller.client.patch(f"/api/v1/memories/{memory.id}", [1], format="json")
    assert response.status_code == 400
