"""Shared fixtures: companies, agents with API keys, and API clients authenticated as them."""

import os
from dataclasses import dataclass

import pytest
from django.db import connection
from rest_framework.test import APIClient

from bench.scratch_db import migrated_template
from persistence.models import Agent
from persistence.services.agents import api_key_issue
from synthorg.db import roles
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory

#: The suite's longest tests (real servers, Chromium, the fuzz, scratch databases), measured
#: with ``--durations``. They start first within pytest-django's groups (non-transactional,
#: transactional, no database), so with ``make test``'s xdist workers the short tests fill
#: in around them instead of one worker finishing a long test alone at the end.
LONG_RUNNING = (
    "tests/e2e/",
    "tests/synthorg/test_api_fuzz.py",
    "tests/synthorg/test_recovery.py",
    "tests/synthorg/test_serve.py",
    "tests/synthorg/test_embedded_pg.py",
    "tests/synthorg/test_api_tenant_probe.py",
    "tests/console/",
    "tests/bench/test_scratch_db.py",
    "tests/persistence/test_admin_scoping.py::test_no_admin_page_names_another_company",
)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items):
    """Long tests first; pytest-django's stable sort by group runs after and keeps this order
    inside each group (a wrapper runs before every plain implementation)."""
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_RUNNING))
    return (yield)


@pytest.fixture(scope="session", autouse=True)
def tenant_files_of_this_run(tmp_path_factory):
    """Company files (``SYNTHORG_TENANT_FILES_DIR``) go to a directory of this run, one per
    xdist worker (its own ``tmp_path_factory`` base), never ``var/tenant-files/``: exported
    too, so ``manage.py serve`` started by a test writes where the test reads."""
    from django.conf import settings

    path = tmp_path_factory.mktemp("tenant-files")
    saved = (settings.SYNTHORG_TENANT_FILES_DIR, os.environ.get("SYNTHORG_TENANT_FILES_DIR"))
    settings.SYNTHORG_TENANT_FILES_DIR = path
    os.environ["SYNTHORG_TENANT_FILES_DIR"] = str(path)
    yield path
    settings.SYNTHORG_TENANT_FILES_DIR = saved[0]
    if saved[1] is None:
        os.environ.pop("SYNTHORG_TENANT_FILES_DIR", None)
    else:
        os.environ["SYNTHORG_TENANT_FILES_DIR"] = saved[1]


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix, django_db_use_migrations, django_db_blocker
):
    """Create and (at the end) drop the test database as the owner role, as a copy of the
    migrated template of this migration set (``bench/scratch_db.py``; the first process to
    need it migrates it, the others wait for it, and it stays on the server for the next run);
    Django's migrate then finds nothing left to apply.

    Returns the app role's login fields; ``django_db_setup`` below switches back to them
    once the test database exists, before any test body runs.
    """
    app_login = roles.use_owner()
    if django_db_use_migrations:
        with django_db_blocker.unblock(), migrated_template(connection) as template:
            connection.settings_dict["TEST"]["TEMPLATE"] = template
    return app_login


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_modify_db_settings, django_db_blocker):
    """Test bodies run as the app role (owns no table, no superuser), as the app does."""
    app_login = django_db_modify_db_settings
    with django_db_blocker.unblock():
        owner_login = roles.use_app(app_login)
    yield
    with django_db_blocker.unblock():
        roles.use_app(owner_login)


@pytest.fixture(scope="session", autouse=True)
def live_server_answers_without_nagle_delay():
    """The live server (``live_server``) writes a response's headers and body in separate
    small writes on a kept-alive connection; with Nagle's algorithm the second waits for the
    client's delayed ACK of the first. ``TCP_NODELAY`` sends each at once, as production
    servers do; the responses are the same bytes."""
    from django.test.testcases import QuietWSGIRequestHandler

    saved = QuietWSGIRequestHandler.disable_nagle_algorithm
    QuietWSGIRequestHandler.disable_nagle_algorithm = True
    yield
    QuietWSGIRequestHandler.disable_nagle_algorithm = saved


#: The tests' stand-in servers (webhook receivers, OpenAI-wire embedders and LLMs) listen on
#: this address; it is allow-listed the way an operator would, the guard itself stays on.
STAND_IN_HOST = "127.0.0.1"


@pytest.fixture(autouse=True)
def outbound_allows_the_stand_ins(settings):
    settings.SYNTHORG_OUTBOUND_ALLOW = STAND_IN_HOST


@dataclass
class AgentCaller:
    agent: Agent
    raw_key: str
    client: APIClient

    @property
    def company(self):
        return self.agent.company


def make_agent_caller(**agent_fields) -> AgentCaller:
    agent = AgentFactory(**agent_fields)
    issued = api_key_issue(agent=agent)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw_key}")
    return AgentCaller(agent=agent, raw_key=issued.raw_key, client=client)


@pytest.fixture
def company(db):
    return CompanyFactory()


@pytest.fixture
def caller(company) -> AgentCaller:
    """An agent of ``company`` with a fresh key and a client that sends it."""
    return make_agent_caller(company=company)


@pytest.fixture
def peer(company) -> AgentCaller:
    """A second agent in the same company."""
    return make_agent_caller(company=company)


@pytest.fixture
def outsider(db) -> AgentCaller:
    """An agent of another company."""
    return make_agent_caller(company=CompanyFactory())


@pytest.fixture
def human_client(company):
    membership = MembershipFactory(company=company, role="admin")
    client = APIClient()
    client.force_login(membership.user)
    client.membership = membership
    return client


@pytest.fixture(autouse=True)
def _fresh_search_caches():
    """Test embedders reuse ids with different vectors, and tests ANALYZE tables of their
    own: no test sees another's cached query vectors or lexeme statistics."""
    from memory.core.selectors.search import sparse
    from memory.prompting.rerank import rerank_cache
    from synthorg.embedding import query_embedding_cache

    query_embedding_cache.clear()
    rerank_cache.clear()
    sparse._lexeme_stats = (float("-inf"), {})
    yield
    query_embedding_cache.clear()
    rerank_cache.clear()
    sparse._lexeme_stats = (float("-inf"), {})
