"""The memory endpoints are in the OpenAPI schema, with examples."""

import pytest
import yaml
from django.core.management import call_command


@pytest.mark.django_db
def test_memory_paths_are_documented_with_examples(tmp_path):
    target = tmp_path / "schema.yml"
    call_command("spectacular", "--file", str(target))
    schema = yaml.safe_load(target.read_text())
    paths = schema["paths"]
    for path, method in [
        ("/api/v1/memories", "post"),
        ("/api/v1/memories", "get"),
        ("/api/v1/memories/{id}", "patch"),
        ("/api/v1/memories/{id}", "delete"),
        ("/api/v1/memories/{id}/history", "get"),
        ("/api/v1/memories/count", "get"),
        ("/api/v1/memories/search", "post"),
        ("/api/v1/memories/context", "post"),
        ("/api/v1/shared", "post"),
        ("/api/v1/shared/search", "post"),
        ("/api/v1/shared/{id}", "delete"),
        ("/api/v1/sessions/{session_id}/end", "post"),
    ]:
        assert method in paths[path], (path, method)
    store = paths["/api/v1/memories"]["post"]
    assert set(store["requestBody"]["content"]["application/json"]["examples"]) == {
        "OneMemory",
        "ABatch",
    }
    filters = {p["name"] for p in paths["/api/v1/memories"]["get"]["parameters"]}
    assert {"category", "namespace", "tag", "created_after", "created_before", "page"} <= filters
    history = paths["/api/v1/memories/{id}/history"]["get"]
    page = history["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert page == "#/components/schemas/PaginatedMemoryRevisionList"
    revision = schema["components"]["schemas"]["MemoryRevision"]
    assert set(revision["properties"]) == {
        "id", "previous_content", "reason", "corrected_by", "created_at", "audit_entry_id",
    }  # fmt: skip
    assert revision["properties"]["corrected_by"]["nullable"] is True
    assert {p["name"] for p in history["parameters"]} == {"id", "page", "page_size"}
