"""Schemathesis fuzzes the live OpenAPI schema: no 5xx, no response outside the schema.

Every operation the schema documents (new endpoints are picked up automatically) gets
schema-conforming and schema-violating requests, generated with a fixed seed, against a
real HTTP server, as an agent (API key) and as a human (session + CSRF token). The run is
bounded twice: ``FUZZ_EXAMPLES`` examples per operation and mode, and a time budget
(``SYNTHORG_FUZZ_SECONDS``, default 90 s) split evenly over the operations, so the whole
suite stays well under 15 minutes on 2 cores; an operation whose share runs out stops early
(how many requests each made is printed). Failures are collected and reported together.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter

import pytest
import requests
import schemathesis
from django.utils.crypto import get_random_string
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import response_schema_conformance

from persistence.services.agents import api_key_issue
from tests.orgmemory.conftest import allow_flush_of_append_only_tables  # noqa: F401
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory


@schemathesis.serializer("application/x-ndjson")
def _json_lines(ctx, value) -> bytes:
    """The import endpoint's body (JSON Lines): whatever was generated, as UTF-8 text."""
    text = value if isinstance(value, str) else str(value)
    return text.encode("utf-8", "surrogatepass")


pytestmark = pytest.mark.django_db(transaction=True)

FUZZ_EXAMPLES = {GenerationMode.POSITIVE: 6, GenerationMode.NEGATIVE: 4}
FUZZ_SECONDS = float(os.environ.get("SYNTHORG_FUZZ_SECONDS", "90"))
CHECKS = [not_a_server_error, response_schema_conformance]


def _checks_for(response, operation) -> list:
    """A documented 501 ``not_supported`` problem (an optional extra this installation does
    not include, e.g. a full-model fine-tune) is an answer, not a server error: only its
    conformance to the schema is checked. Any other 5xx fails."""
    if response.status_code == 501 and "501" in operation.definition.raw.get("responses", {}):
        try:
            code = response.json().get("code")
        except ValueError:
            code = None
        if code == "not_supported":
            return [response_schema_conformance]
    return CHECKS


@pytest.fixture
def short_lived_server_connections():
    """The live server answers each request on a new thread, which opens its own database
    connection; with ``CONN_MAX_AGE`` those would outlive the threads and keep the test
    database from being dropped at the end of the run. Close each at the end of its request.
    """
    from django.db import connections

    config = connections.settings["default"]
    previous = config.get("CONN_MAX_AGE", 0)
    config["CONN_MAX_AGE"] = 0
    yield
    config["CONN_MAX_AGE"] = previous


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx, value):
    """JSON Lines bodies (the import endpoint): one JSON value per line."""
    values = value if isinstance(value, list) else [value]
    return "\n".join(json.dumps(v) for v in values).encode("utf-8")


#: The fuzzing agent's id: far from the small ids the generator tries first, so the human
#: admin's fuzzed ``POST /agents/{id}/erase`` (which revokes the erased agent's keys, as it
#: should) erases some other id, not the agent the run authenticates as.
FUZZING_AGENT_ID = 987_654_321


def _agent_auth(company):
    agent = AgentFactory(
        id=FUZZING_AGENT_ID, company=company, seniority="senior", memory_level="persistent"
    )
    key = api_key_issue(agent=agent).raw_key
    return {"headers": {"Authorization": f"Bearer {key}"}}


def _human_auth(client, company):
    membership = MembershipFactory(company=company, role="admin")
    client.force_login(membership.user)
    secret = get_random_string(32)
    return {
        "headers": {"X-CSRFToken": secret},
        "cookies": {"sessionid": client.cookies["sessionid"].value, "csrftoken": secret},
    }


def _fuzz(schema, base_url, auths, budget_per_operation):
    """Each generated case is sent once per principal (generation is the slow part)."""
    failures: list[str] = []
    calls: dict[str, Counter[str]] = {label: Counter() for label in auths}
    session = requests.Session()
    for result in schema.get_all_operations():
        operation = result.ok()
        deadline = time.monotonic() + budget_per_operation
        for mode, examples in FUZZ_EXAMPLES.items():
            _operation_test(
                operation,
                mode,
                examples,
                deadline=deadline,
                auths=auths,
                send=lambda case, auth: case.call(
                    base_url=base_url, session=session, timeout=60, **auth
                ),
                calls=calls,
                failures=failures,
            )()
    for label, counter in calls.items():
        accepted = counter.get("accepted writes", 0)
        print(
            f"\nfuzzed {len(counter) - (accepted > 0)} operations as {label} with "
            f"{sum(counter.values()) - accepted} requests ({accepted} writes accepted)",
            file=sys.stderr,
        )
    return failures, calls


def _operation_test(operation, mode, examples, *, deadline, auths, send, calls, failures):
    name = f"{operation.method.upper()} {operation.path}"

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case):
        for label, auth in auths.items():
            if time.monotonic() > deadline and calls[label][name]:
                continue
            response = send(case, auth)
            calls[label][name] += 1
            if case.method.upper() != "GET" and response.status_code < 300:
                calls[label]["accepted writes"] += 1
            try:
                case.validate_response(response, checks=_checks_for(response, case.operation))
            except (AssertionError, FailureGroup) as exc:  # report every check failure
                failures.append(
                    f"[{label} {mode.value}] {name} → {response.status_code}: {exc}"[:1500]
                )

    return run


def test_schemathesis_finds_no_server_error_and_no_schema_violation(live_server, client):
    company = CompanyFactory()
    CompanyFactory()  # another tenant, so company scoping is exercised
    auths = {"agent": _agent_auth(company), "human": _human_auth(client, company)}

    raw = requests.get(
        f"{live_server.url}/api/schema/?format=json",
        timeout=120,
        **auths["agent"],
    )
    assert raw.status_code == 200
    schema = schemathesis.openapi.from_dict(raw.json())
    operations = sum(1 for _ in schema.get_all_operations())
    assert operations >= 80  # the whole API, not a filtered subset
    budget = FUZZ_SECONDS / operations

    failures, calls = _fuzz(schema, live_server.url, auths, budget)
    for label, counter in calls.items():
        # Authenticated writes got through (the session's CSRF token works, the key is valid).
        assert counter.pop("accepted writes", 0) > 0, label
        assert len(counter) == operations, f"every operation got a request as {label}"
    assert not failures, f"{len(failures)} failure(s):\n" + "\n\n".join(failures[:30])
