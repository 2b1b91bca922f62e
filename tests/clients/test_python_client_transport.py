"""The Python client's answers to the states the real server only reaches when something is
down (503 ``database_unavailable`` with ``Retry-After``, a 500 with its correlation id, a
proxy's HTML 502, no server at all): a scripted HTTP server on a free port, answering with
the bodies the product's own problem builder writes."""

import asyncio
import socket
from email.utils import format_datetime

import pytest
from django.utils import timezone

from synthorg.api.errors import problem_body
from synthorg.db.unavailable import DETAIL
from synthorg_memory import (
    AsyncMemoryClient,
    MemoryClient,
    ServerError,
    UnavailableError,
)
from tests.support.openai_server import FakeOpenAIServer, ScriptedResponse

SEARCH = "/api/v1/memories/search"
EMPTY = {"results": [], "degraded": []}
UNAVAILABLE = problem_body(
    status_code=503,
    code="database_unavailable",
    detail=DETAIL,
    extra={"correlation_id": "c0ffee"},
)


def unavailable(retry_after):
    return ScriptedResponse(status=503, json=UNAVAILABLE, headers={"Retry-After": retry_after})


@pytest.fixture
def server():
    with FakeOpenAIServer() as running:
        yield running


def client_of(server, **options):
    root = server.base_url.removesuffix("/v1")
    return MemoryClient(base_url=root, api_key="k", **options)


def test_a_503_is_retried_after_retry_after_in_seconds_or_as_a_date(server):
    past = format_datetime(timezone.now() - timezone.timedelta(seconds=30), usegmt=True)
    server.enqueue(SEARCH, unavailable("0"), unavailable(past), ScriptedResponse(json=EMPTY))
    with client_of(server) as client:
        found = client.memories.search(query="deploys")
    assert (found.results, found.degraded) == ([], [])
    sent = server.requests_to(SEARCH)
    assert len(sent) == 3
    assert [r.json() for r in sent] == [{"query": "deploys"}] * 3
    assert {r.headers["authorization"] for r in sent} == {"Bearer k"}


def test_the_503_surfaces_after_the_last_retry_with_the_servers_problem(server):
    server.enqueue(SEARCH, *[unavailable("5") for _ in range(3)])
    with (
        client_of(server, max_retries=2, max_retry_wait=0.01) as client,
        pytest.raises(UnavailableError) as down,
    ):
        client.memories.search(query="deploys")
    assert len(server.requests_to(SEARCH)) == 3
    error = down.value
    assert (error.status, error.code, error.detail, error.attempts) == (
        503, "database_unavailable", DETAIL, 3,
    )  # fmt: skip
    assert (error.retry_after, error.correlation_id) == (5.0, "c0ffee")


def test_other_failures_are_not_retried(server):
    bug = problem_body(
        status_code=500,
        code="internal_error",
        detail="Internal server error.",
        extra={"correlation_id": "5e1f"},
    )
    server.enqueue(
        SEARCH,
        ScriptedResponse(status=500, json=bug),
        ScriptedResponse(status=502, body=b"<html>Bad gateway</html>"),
    )
    with client_of(server) as client:
        with pytest.raises(ServerError) as failed:
            client.memories.search(query="x")
        assert (failed.value.code, failed.value.correlation_id) == ("internal_error", "5e1f")
        with pytest.raises(UnavailableError) as proxy:
            client.memories.search(query="x")
        assert (proxy.value.status, proxy.value.code, proxy.value.detail) == (
            502, "http_502", "<html>Bad gateway</html>",
        )  # fmt: skip
    assert len(server.requests_to(SEARCH)) == 2


def test_no_server_is_unavailable_without_a_status():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    with (
        MemoryClient(base_url=f"http://127.0.0.1:{port}", api_key="k") as client,
        pytest.raises(UnavailableError) as down,
    ):
        client.memories.count()
    assert (down.value.status, down.value.code, down.value.attempts) == (
        None, "connection_error", 1,
    )  # fmt: skip


def test_the_async_client_retries_the_same_way(server):
    server.enqueue(SEARCH, unavailable("0"), ScriptedResponse(json=EMPTY))

    async def search():
        root = server.base_url.removesuffix("/v1")
        async with AsyncMemoryClient(base_url=root, api_key="k") as client:
            return await client.memories.search(query="deploys")

    assert asyncio.run(search()).results == []
    assert len(server.requests_to(SEARCH)) == 2
