"""Serving: persistent database connections carry nothing from one request to the next, and
the uvicorn workers run on the C parser and event loop (see README, "Serving model")."""

import pytest
from django.db import connection
from psycopg.pq import TransactionStatus

from tests.conftest import make_agent_caller
from tests.persistence.factories import CompanyFactory

SESSION_SETTINGS = (
    "SELECT name, setting FROM pg_settings WHERE source NOT IN ('default', 'override') "
    "ORDER BY name"
)
WATCHED = ("enable_nestloop", "enable_sort", "hnsw.ef_search", "hnsw.iterative_scan")


def _state():
    """The connection's non-default settings and the planner settings requests change
    (transaction-locally), read on the same connection the requests used."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT '[1,2]'::vector")  # loads pgvector: hnsw.* are defined from then
        cursor.execute(SESSION_SETTINGS)
        settings = cursor.fetchall()
        cursor.execute(
            "SELECT " + ", ".join(f"current_setting('{name}', true)" for name in WATCHED)
        )
        watched = dict(zip(WATCHED, cursor.fetchone(), strict=True))
    return settings, watched


# Transactional: each request's transactions really commit or roll back, as on the server
# (in a plain django_db test everything would run inside the test's own transaction).
@pytest.mark.django_db(transaction=True)
def test_requests_leave_no_session_state_on_the_reused_connection():
    ours = make_agent_caller(company=CompanyFactory())
    theirs = make_agent_caller(company=CompanyFactory())
    assert ours.client.get("/api/v1/me").status_code == 200  # connection open, key stamped
    before = _state()
    raw_connection = connection.connection
    for turn, who in enumerate((ours, theirs, ours)):
        content = f"Billing deploys on {('Mondays', 'Fridays', 'Sundays')[turn]} at noon."
        stored = who.client.post(
            "/api/v1/memories",
            {"content": content, "category": "semantic"},
            format="json",
        )
        assert stored.status_code == 201, stored.content
        searched = who.client.post(
            "/api/v1/memories/search", {"query": "when does billing deploy?"}, format="json"
        )
        assert searched.status_code == 200
        assert {hit["memory"]["agent_id"] for hit in searched.json()["results"]} == {who.agent.pk}
        context = who.client.post(
            "/api/v1/memories/context",
            {"query": "prepare the billing deploy", "token_budget": 400},
            format="json",
        )
        assert context.status_code == 200
        refused = who.client.post(
            "/api/v1/memories", {"content": "", "category": "semantic"}, format="json"
        )
        assert refused.status_code == 400
        # Nothing left open between requests, on the very connection that served them.
        assert connection.connection is raw_connection
        assert connection.connection.info.transaction_status == TransactionStatus.IDLE
        assert _state() == before
    assert before[1]["enable_nestloop"] == "on"


def test_uvicorn_workers_use_httptools_and_uvloop():
    """``uvicorn_worker.UvicornWorker`` asks uvicorn for ``auto``: these when installed."""
    import uvicorn
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    from uvicorn_worker import UvicornWorker

    assert UvicornWorker.CONFIG_KWARGS == {"loop": "auto", "http": "auto"}
    config = uvicorn.Config(app=None, **UvicornWorker.CONFIG_KWARGS)
    config.load()
    assert config.http_protocol_class is HttpToolsProtocol
    import uvloop

    assert config.get_loop_factory() is uvloop.new_event_loop
