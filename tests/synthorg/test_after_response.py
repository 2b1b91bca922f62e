"""Bookkeeping after the response: the request log row and the core-policy delivery are
written when the server closes the response (after the body is sent), each kind in one
statement; outside a request they are written at once; a failing flush is logged and the
others still run."""

import json
import logging

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from memory.core.models import RequestLogEntry
from orgmemory.models import PolicyDelivery
from orgmemory.selectors.policies import pinned_core_policies
from orgmemory.services.policies import policy_add
from persistence.principal import Principal
from synthorg.after_response import AfterResponseMiddleware, after_response
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def served():
    """Call the WSGI application as a server does; the caller closes the response."""
    # the test's transaction stays open (as Django's test client does)
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    handler = WSGIHandler()

    def call(caller, path, body):
        environ = (
            RequestFactory()
            .post(
                path,
                data=json.dumps(body),
                content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {caller.raw_key}",
            )
            .environ
        )
        statuses = []
        response = handler(environ, lambda status, headers: statuses.append(status))
        return statuses[0], b"".join(response), response

    yield call
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _statements(queries, table):
    return [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().startswith("INSERT INTO") and table in q["sql"]
    ]


def test_the_rows_are_written_when_the_response_is_closed(caller, served):
    admin = MembershipFactory(company=caller.company, role="admin", user__password=None)
    policy_add(
        company=caller.company,
        actor=Principal.for_human(admin.user, caller.company, "admin"),
        content="Never push to main",
    )
    status, body, response = served(
        caller, "/api/v1/memories/context", {"query": "deploys", "token_budget": 300}
    )
    assert status.startswith("200")
    assert json.loads(body)["messages"][0]["content"].endswith("- Never push to main")
    # the client has the whole answer; nothing is written yet
    assert not RequestLogEntry.objects.exists()
    assert not PolicyDelivery.objects.exists()

    with CaptureQueriesContext(connection) as queries:
        response.close()

    assert list(
        RequestLogEntry.objects.values_list("agent_id", "kind", "via", "query", "result_count")
    ) == [(caller.agent.pk, "context", "rest", "deploys", 0)]
    delivery = PolicyDelivery.objects.get()
    assert (delivery.agent_id, delivery.revision) == (
        caller.agent.pk,
        pinned_core_policies(company=caller.company).revision,
    )
    assert len(_statements(queries, "memory_requestlogentry")) == 1
    assert len(_statements(queries, "orgmemory_policydelivery")) == 1


def test_items_of_one_request_flush_once_in_order_and_a_failure_is_logged(caplog):
    calls = []

    def flush_a(items):
        calls.append(("a", list(items)))

    def broken(items):
        raise RuntimeError("database gone")

    def flush_b(items):
        calls.append(("b", list(items)))

    class Response:
        def __init__(self):
            self._resource_closers = []

    def view(request):
        after_response(flush_a, 1)
        after_response(broken, "lost")
        after_response(flush_b, "x")
        after_response(flush_a, 2)
        assert calls == []  # nothing runs during the request
        return Response()

    response = AfterResponseMiddleware(view)(object())
    assert calls == []
    with caplog.at_level(logging.ERROR, logger="synthorg.after_response"):
        for closer in response._resource_closers:
            closer()
    assert calls == [("a", [1, 2]), ("b", ["x"])]
    assert "lost 1 item(s)" in caplog.text


def test_outside_a_request_the_flush_runs_at_once():
    calls = []
    after_response(calls.append, "now")
    assert calls == [["now"]]


def test_a_view_that_raises_still_flushes_what_it_recorded():
    calls = []

    def view(request):
        after_response(calls.append, "recorded")
        raise ValueError("boom")

    with pytest.raises(ValueError):
        AfterResponseMiddleware(view)(object())
    assert calls == [["recorded"]]
