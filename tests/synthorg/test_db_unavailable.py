"""A database that cannot be reached: 503 + Retry-After (problem for the API, a page for
the console), never a 500; the service answers normally once it is back.

The outage is real: the connection is closed and its settings point at a directory with no
server socket, so psycopg fails to connect exactly as it does while the postmaster
restarts."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from django.db import connection

from memory.core.models.memory import Memory

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def database_unreachable(nowhere):
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict["HOST"] = str(nowhere)
    connection.settings_dict["PORT"] = "5432"
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


def test_api_answers_503_problem_while_the_database_is_unreachable(caller, tmp_path):
    with database_unreachable(tmp_path):
        read = caller.client.get("/api/v1/memories")
        write = caller.client.post(
            "/api/v1/memories",
            {"content": "Lunch is at noon.", "category": "social"},
            format="json",
        )
    for response in (read, write):
        assert response.status_code == 503
        assert response["Content-Type"] == "application/problem+json"
        assert response["Retry-After"] == "5"
        body = response.json()
        assert (body["status"], body["code"]) == (503, "database_unavailable")
        assert body["detail"].startswith("The database is unavailable")
        assert len(body["correlation_id"]) == 32
    assert not Memory.objects.exists()  # nothing half-written

    # back: the next request opens a fresh connection
    stored = caller.client.post(
        "/api/v1/memories", {"content": "Lunch is at noon.", "category": "social"}, format="json"
    )
    assert stored.status_code == 201, stored.json()
    assert Memory.objects.filter(agent=caller.agent).count() == 1


def test_console_pages_answer_503_while_the_database_is_unreachable(human_client, tmp_path):
    assert human_client.get("/console/inbox/").status_code == 200
    with database_unreachable(tmp_path):
        response = human_client.get("/console/inbox/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert b"The database is unavailable" in response.content
