"""Company config knobs that must take effect or be refused: secrets allow-list, embedder
dims, memory.level for new agents, options.retention_days; config changes are audited."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from memory.core.models.memory import Memory
from memory.core.services.maintenance import run_maintenance
from persistence.models import AuditEntry, Company
from persistence.selectors.config import company_config
from persistence.services.agents import agent_create, agent_update
from persistence.services.companies import company_config_set
from synthorg.company_config import parse_company_config
from synthorg.company_config.memory import MAX_EMBEDDING_DIMS
from synthorg.errors import ConflictError, InvalidInputError
from tests.memory.core.maintenance.conftest import seed
from tests.persistence.factories import AgentFactory, CompanyFactory

pytestmark = pytest.mark.django_db


def _embedder(**fields):
    return {
        "memory": {"embedder": {"model": "m", "dims": 384, "base_url": "http://e/v1", **fields}}
    }


@pytest.mark.parametrize(
    "name",
    [
        "DJANGO_SECRET_KEY",
        "DATABASE_URL",
        "SYNTHORG_LLM_API_KEY",
        "synthorg_secret_x",
        "SYNTHORG_SECRET_",
    ],
)
def test_api_key_env_outside_the_allow_list_is_refused_naming_the_field(name):
    company = CompanyFactory()
    with pytest.raises(InvalidInputError) as caught:
        company_config_set(company=company, data=_embedder(api_key_env=name))
    [error] = caught.value.errors
    assert error["field"] == "memory.embedder.api_key_env"
    assert "SYNTHORG_SECRET_<NAME>" in error["message"] and repr(name) in error["message"]
    company.refresh_from_db()
    assert (company.config, company.config_revision) == ({}, 1)
    assert not AuditEntry.objects.filter(action_type="company.config_changed").exists()


def test_a_secret_granted_to_the_company_is_accepted(settings):
    company = CompanyFactory()
    settings.SYNTHORG_SECRET_GRANTS = f"SYNTHORG_SECRET_EMBEDDER={company.pk}"
    company_config_set(company=company, data=_embedder(api_key_env="SYNTHORG_SECRET_EMBEDDER"))
    assert company_config(company).memory.embedder.api_key_env == "SYNTHORG_SECRET_EMBEDDER"


def test_another_companys_secret_is_refused_at_write_naming_the_field(settings):
    """Finding 4: company C's admin named the secret granted to company A."""
    owner, other = CompanyFactory(), CompanyFactory()
    settings.SYNTHORG_SECRET_GRANTS = f"SYNTHORG_SECRET_ACME_EMBED={owner.pk}"
    with pytest.raises(InvalidInputError) as caught:
        company_config_set(company=other, data=_embedder(api_key_env="SYNTHORG_SECRET_ACME_EMBED"))
    assert caught.value.code == "invalid_company_config"
    assert caught.value.errors == [
        {
            "field": "memory.embedder.api_key_env",
            "message": (
                f"SYNTHORG_SECRET_ACME_EMBED is not granted to company {other.pk}: the server "
                "operator grants secrets to companies (by id) with SYNTHORG_SECRET_GRANTS"
            ),
            "code": "secret_not_granted",
        }
    ]
    other.refresh_from_db()
    assert (other.config, other.config_revision) == ({}, 1)
    assert not AuditEntry.objects.filter(action_type="company.config_changed").exists()


def test_a_grant_stays_with_its_company_when_its_slug_is_renamed_and_taken(settings):
    """Issue 34: grants named slugs, so a company that took a renamed company's old slug
    inherited the secret granted to it."""
    from persistence.services.companies import company_create, company_rename

    granted = CompanyFactory(slug="acme")
    settings.SYNTHORG_SECRET_GRANTS = f"SYNTHORG_SECRET_ACME_EMBED={granted.pk}"
    company_config_set(company=granted, data=_embedder(api_key_env="SYNTHORG_SECRET_ACME_EMBED"))
    company_rename(company=granted, name=granted.name, slug="acme-old")
    with pytest.raises(InvalidInputError) as caught:
        company_create(
            name="Squatter", slug="acme", config=_embedder(api_key_env="SYNTHORG_SECRET_ACME_EMBED")
        )
    assert caught.value.errors[0]["code"] == "secret_not_granted"
    assert not Company.objects.filter(slug="acme").exists()  # rolled back with the refusal
    company_config_set(company=granted, data=_embedder(api_key_env="SYNTHORG_SECRET_ACME_EMBED"))


def test_an_ungranted_secret_is_refused_at_use_and_never_sent(settings, monkeypatch):
    """A grant withdrawn after the config was written: the key is not read, nothing sent."""
    from persistence.selectors.embedder import cached_remote_embedder, company_embedder
    from synthorg.errors import UnprocessableError

    company = CompanyFactory()
    settings.SYNTHORG_SECRET_GRANTS = f"SYNTHORG_SECRET_ACME_EMBED={company.pk}"
    company_config_set(company=company, data=_embedder(api_key_env="SYNTHORG_SECRET_ACME_EMBED"))
    settings.SYNTHORG_SECRET_GRANTS = ""
    monkeypatch.setenv("SYNTHORG_SECRET_ACME_EMBED", "sk-acme")
    cached_remote_embedder.cache_clear()
    with pytest.raises(UnprocessableError) as caught:
        company_embedder(company)
    assert caught.value.code == "secret_not_granted"
    assert cached_remote_embedder.cache_info().currsize == 0  # no client holding the key


def test_secret_grants_parse_and_refuse_malformed_entries():
    from synthorg.tenancy import parse_secret_grants

    assert parse_secret_grants("SYNTHORG_SECRET_A=3, SYNTHORG_SECRET_B=3|17") == {
        "SYNTHORG_SECRET_A": frozenset({3}),
        "SYNTHORG_SECRET_B": frozenset({3, 17}),
    }
    for bad in (
        "DATABASE_URL=3",
        "SYNTHORG_SECRET_A",
        "SYNTHORG_SECRET_A=",
        "SYNTHORG_SECRET_A=a/b",
        "SYNTHORG_SECRET_A=acme",  # a slug: renamed, it could name another company
        "SYNTHORG_SECRET_A=0",
        "SYNTHORG_SECRET_A=3|acme",
    ):
        with pytest.raises(ValueError, match="SYNTHORG_SECRET_GRANTS"):
            parse_secret_grants(bad)


def test_load_company_config_refuses_a_server_secret(tmp_path):
    company = CompanyFactory()
    path = tmp_path / "c.yaml"
    path.write_text(
        "memory:\n  embedder:\n    model: m\n    dims: 384\n    base_url: http://e/v1\n"
        "    api_key_env: DJANGO_SECRET_KEY\n"
    )
    with pytest.raises(CommandError, match=r"memory\.embedder\.api_key_env: must name"):
        call_command("load_company_config", company.slug, str(path))


@pytest.mark.parametrize("dims", [8, 384, 768, 1536, 2000, 2001, 3072, 4000])
def test_embedder_dims_up_to_the_hnsw_limit_are_accepted(dims):
    company = CompanyFactory()
    company_config_set(company=company, data=_embedder(dims=dims))
    assert company_config(company).memory.embedder.dims == dims


@pytest.mark.parametrize("dims", [MAX_EMBEDDING_DIMS + 1, 8192, 100_000])
def test_embedder_dims_no_index_can_hold_are_refused(dims):
    assert MAX_EMBEDDING_DIMS == 4000  # pgvector's HNSW limit (halfvec)
    company = CompanyFactory()
    with pytest.raises(InvalidInputError) as caught:
        company_config_set(company=company, data=_embedder(dims=dims))
    [error] = caught.value.errors
    assert error["field"] == "memory.embedder.dims"
    assert error["message"] == (
        f"{dims}-dimensional vectors cannot be indexed: pgvector's HNSW index holds at most "
        "4000 dimensions (as halfvec); use a model or a `dimensions` setting that produces "
        "at most 4000"
    )
    company.refresh_from_db()
    assert (company.config, company.config_revision) == ({}, 1)


def test_memory_level_is_the_default_level_of_new_agents():
    company = CompanyFactory()
    assert agent_create(company=company, name="a").memory_level == "session"  # spec default
    company_config_set(company=company, data={"memory": {"level": "project"}})
    assert agent_create(company=company, name="b").memory_level == "project"
    assert agent_create(company=company, name="c", memory_level="none").memory_level == "none"
    entry = AuditEntry.objects.filter(action_type="agent.created").latest("id")
    assert entry.details["memory_level"] == "none"


def test_retention_days_option_archives_old_memories():
    now = timezone.now()
    company = CompanyFactory()
    company_config_set(company=company, data={"memory": {"options": {"retention_days": 30}}})
    config = company_config(company).memory
    assert config.consolidation.retention.default_retention_days == 30
    agent = AgentFactory(company=company)
    old = seed(agent, 3, now=now, age_days=45, category="semantic")
    fresh = seed(agent, 2, now=now, age_days=5, category="semantic")
    run_maintenance(agent=agent, now=now)
    assert not Memory.objects.filter(pk__in=[m.pk for m in old]).exists()
    assert Memory.objects.filter(pk__in=[m.pk for m in fresh]).count() == 2
    run = MaintenanceRun.objects.get(agent=agent)
    assert (run.retention_archived, run.retention_deleted, run.deleted) == (3, 0, 0)
    assert set(ArchivedMemory.objects.filter(agent=agent).values_list("original_id", "mode")) == {
        (m.pk, "retention") for m in old
    }


def test_retention_days_disagreeing_with_the_consolidation_default_is_refused():
    company = CompanyFactory()
    data = {
        "memory": {
            "options": {"retention_days": 30},
            "consolidation": {"retention": {"default_retention_days": 7}},
        }
    }
    with pytest.raises(InvalidInputError) as caught:
        company_config_set(company=company, data=data)
    assert caught.value.errors[0]["field"] == (
        "memory.consolidation.retention.default_retention_days"
    )


def test_config_change_is_audited_with_the_changed_paths_and_their_values():
    company = CompanyFactory()
    company_config_set(company=company, data={"memory": {"level": "persistent"}})
    company_config_set(
        company=company, data={"memory": {"level": "persistent", "options": {"retention_days": 9}}}
    )
    first, second = AuditEntry.objects.filter(action_type="company.config_changed").order_by("id")
    assert first.details == {
        "revision": 2,
        "changed": ["memory.level"],
        "changes": [{"field": "memory.level", "old": "session", "new": "persistent"}],
        "via": "",
    }
    assert second.details == {
        "revision": 3,
        "changed": [
            "memory.consolidation.retention.default_retention_days",
            "memory.options.retention_days",
        ],
        "changes": [
            {
                "field": "memory.consolidation.retention.default_retention_days",
                "old": None,
                "new": 9,
            },
            {"field": "memory.options.retention_days", "old": None, "new": 9},
        ],
        "via": "",
    }


def test_a_save_from_a_stale_revision_is_refused_and_changes_nothing():
    company = CompanyFactory()
    company_config_set(company=company, data={"memory": {"level": "persistent"}})  # rev 2
    with pytest.raises(ConflictError) as caught:
        company_config_set(
            company=company, data={"memory": {"level": "project"}}, expected_revision=1
        )
    assert (caught.value.status, caught.value.code) == (409, "config_revision_conflict")
    assert caught.value.extra == {"current_revision": 2}
    company.refresh_from_db()
    assert (company.config_revision, company.config["memory"]["level"]) == (2, "persistent")
    assert AuditEntry.objects.filter(action_type="company.config_changed").count() == 1
    company_config_set(company=company, data={"memory": {"level": "project"}}, expected_revision=2)
    company.refresh_from_db()
    assert (company.config_revision, company.config["memory"]["level"]) == (3, "project")


def test_seniority_and_level_changes_are_audited_other_no_ops_are_not():
    agent = AgentFactory(seniority="mid", memory_level="persistent")
    agent_update(agent=agent, seniority="senior", memory_level="session")
    agent_update(agent=agent, seniority="senior")  # no change: no entry
    [entry] = AuditEntry.objects.filter(action_type="agent.updated")
    assert entry.risk_level == "medium"
    assert entry.details == {
        "changes": {"seniority": ["mid", "senior"], "memory_level": ["persistent", "session"]}
    }
    agent.refresh_from_db()
    assert (agent.seniority, agent.memory_level) == ("senior", "session")


def test_stored_configs_with_a_server_secret_are_cleaned_by_the_migration():
    import importlib

    from django.apps import apps

    migration = importlib.import_module("persistence.migrations.0006_company_config_secret_env")
    company = CompanyFactory()
    raw = _embedder(api_key_env="DATABASE_URL")
    Company.objects.filter(pk=company.pk).update(config=raw)
    migration.drop_disallowed_secret_env(apps, None)
    company.refresh_from_db()
    assert company.config["memory"]["embedder"]["api_key_env"] is None
    assert company.config_revision == 2
    assert company_config(company).memory.embedder.api_key_env is None


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"backend": "composite", "composite": {"routes": {"org": "pgvector"}}}, "backend"),
        ({"backend": "composite"}, "backend"),
        ({"composite": {"routes": {}}}, "composite"),
    ],
)
def test_the_composite_backend_is_refused_at_load_saying_why(section, field):
    """Seed 003's ``backend: composite``: refused with the reason (ADR 0011), not as an
    unknown value; nothing is stored."""
    from synthorg.company_config.memory import COMPOSITE_REFUSED

    company = CompanyFactory()
    with pytest.raises(InvalidInputError) as caught:
        company_config_set(company=company, data={"memory": section})
    assert (caught.value.status, caught.value.code) == (400, "invalid_company_config")
    assert caught.value.errors == [
        {
            "field": f"memory.{field}",
            "message": COMPOSITE_REFUSED,
            "code": "composite_backend_refused",
        }
    ]
    assert "one engine (PostgreSQL + pgvector)" in COMPOSITE_REFUSED
    company.refresh_from_db()
    assert (company.config, company.config_revision) == ({}, 1)


def test_load_company_config_refuses_composite_naming_the_reason(tmp_path):
    path = tmp_path / "company.yaml"
    path.write_text("memory:\n  backend: composite\n")
    company = CompanyFactory()
    with pytest.raises(CommandError, match="composite backend is not offered"):
        call_command("load_company_config", company.slug, str(path))
    company.refresh_from_db()
    assert company.config == {}


#: keys the seeds name that this service does not run: refused with what runs instead
NOT_OFFERED = [
    (
        {"memory": {"backend": "mem0"}},
        "memory.backend",
        "'mem0' is not offered: this service has one memory engine, PostgreSQL + pgvector "
        "(the seeds' Mem0 backend is not run); remove the key or set 'pgvector'",
    ),
    (
        {"memory": {"storage": {"vector_store": "qdrant"}}},
        "memory.storage.vector_store",
        "'qdrant' is not offered: vectors are stored in PostgreSQL with pgvector; remove the "
        "key or set 'pgvector'",
    ),
    (
        {"memory": {"storage": {"history_store": "sqlite"}}},
        "memory.storage.history_store",
        "'sqlite' is not offered: memory history is stored in PostgreSQL; remove the key or "
        "set 'postgresql'",
    ),
    (
        {"memory": {"storage": {"data_dir": "/srv/memory"}}},
        "memory.storage.data_dir",
        "'/srv/memory' is not offered: memories are rows in PostgreSQL, no directory is "
        "opened, so a data_dir would change nothing; remove the key",
    ),
    (
        {"org_memory": {"extended_store": {"backend": "sqlite"}}},
        "org_memory.extended_store.backend",
        "'sqlite' is not offered: org facts are stored in PostgreSQL; remove the key or set "
        "'postgresql'",
    ),
    (
        {"org_memory": {"backend": "graph"}},
        "org_memory.backend",
        "'graph' is not offered: org memory is the core policies in every prompt plus "
        "retrieval over the extended store (hybrid_prompt_retrieval), the one org-memory "
        "backend; remove the key or set 'hybrid_prompt_retrieval'",
    ),
    (
        _embedder(provider="openai"),
        "memory.embedder.provider",
        "is not used: every embedder is called through the OpenAI-compatible /embeddings API "
        "(OpenAI, Ollama /v1, vLLM, LM Studio, ...) at base_url; remove provider and set "
        "base_url, model and dims",
    ),
    (
        {"memory": {"embedder": {"model": "text-embedding-3-small", "dims": 384}}},
        "memory.embedder.base_url",
        "is required: without a base_url the company uses the local embedder "
        "(all-MiniLM-L6-v2, 384 dims) and model, dims and api_key_env would change nothing",
    ),
    (
        {"memory": {"embedder": {"api_key_env": "SYNTHORG_SECRET_X"}}},
        "memory.embedder.api_key_env",
        "is required: without a base_url the company uses the local embedder "
        "(all-MiniLM-L6-v2, 384 dims) and model, dims and api_key_env would change nothing",
    ),
    (
        {"memory": {"retrieval": {"strategy": "tool_based", "injection_point": "user"}}},
        "memory.retrieval.injection_point",
        "'user' is not offered with strategy 'tool_based': it places the injected memories, "
        "and tool_based injects none (the agent searches with tools); remove the key or use "
        "strategy 'context' or 'self_editing'",
    ),
    *(
        (
            {"memory": {section: never, "procedural": {"evolver": {"enabled": True}}}},
            "memory.procedural.evolver.enabled",
            "is not offered with consolidation.interval 'never': the evolver runs on the "
            "consolidation schedule, so it would never run; set memory.consolidation.interval "
            "to hourly, daily or weekly, or remove the key",
        )
        for section, never in (
            ("consolidation", {"interval": "never"}),
            ("options", {"consolidation_interval": "never"}),
        )
    ),
]


@pytest.mark.parametrize(
    ("data", "field", "message"), NOT_OFFERED, ids=[field for _, field, _ in NOT_OFFERED]
)
def test_a_value_this_service_does_not_run_is_refused_saying_what_runs(data, field, message):
    """Accepted, these would record a choice that changes nothing (issue 26: no knob
    accepted and ignored); nothing is stored and nothing is audited."""
    company = CompanyFactory()
    with pytest.raises(InvalidInputError) as caught:
        company_config_set(company=company, data=data)
    assert (caught.value.status, caught.value.code) == (400, "invalid_company_config")
    assert caught.value.errors == [
        {"field": field, "message": message, "code": "config_value_not_offered"}
    ]
    company.refresh_from_db()
    assert (company.config, company.config_revision) == ({}, 1)
    assert not AuditEntry.objects.filter(action_type="company.config_changed").exists()


def test_the_values_that_run_are_accepted_where_the_seeds_name_them():
    company = CompanyFactory()
    data = {
        "memory": {
            "backend": "pgvector",
            "storage": {
                "data_dir": "/data/memory",
                "vector_store": "pgvector",
                "history_store": "postgresql",
            },
        },
        "org_memory": {
            "backend": "hybrid_prompt_retrieval",
            "extended_store": {"backend": "postgresql"},
        },
    }
    company_config_set(company=company, data=data)
    company.refresh_from_db()
    assert company.config_revision == 2
    assert company_config(company).memory.storage.vector_store == "pgvector"


def test_stored_configs_with_values_not_offered_are_cleaned_by_the_migration():
    import importlib

    from django.apps import apps

    migration = importlib.import_module(
        "persistence.migrations.0009_company_config_values_not_offered"
    )
    seeds = CompanyFactory()
    remote = CompanyFactory()
    untouched = CompanyFactory()
    Company.objects.filter(pk=seeds.pk).update(
        config={
            "memory": {
                "backend": "mem0",
                "level": "persistent",
                "storage": {
                    "data_dir": "/data/memory",
                    "vector_store": "qdrant",
                    "history_store": "sqlite",
                },
                "embedder": {"provider": "openai", "model": "m", "dims": 384},
            },
            "org_memory": {
                "backend": "hybrid_prompt_retrieval",
                "extended_store": {"backend": "sqlite", "max_retrieved_per_query": 7},
            },
        }
    )
    Company.objects.filter(pk=remote.pk).update(config=_embedder(provider="ollama"))
    Company.objects.filter(pk=untouched.pk).update(config={"memory": {"level": "project"}})
    migration.drop_values_not_offered(apps, None)
    for company in (seeds, remote, untouched):
        company.refresh_from_db()
    assert seeds.config == {
        "memory": {
            "level": "persistent",
            "storage": {"data_dir": "/data/memory"},
            "embedder": None,
        },
        "org_memory": {
            "backend": "hybrid_prompt_retrieval",
            "extended_store": {"max_retrieved_per_query": 7},
        },
    }
    assert remote.config == {
        "memory": {"embedder": {"model": "m", "dims": 384, "base_url": "http://e/v1"}}
    }
    assert (seeds.config_revision, remote.config_revision, untouched.config_revision) == (2, 2, 1)
    # each rewrite is audited with what was dropped; the untouched company gets nothing

    entries = AuditEntry.objects.filter(action_type="company.config_changed").order_by("id")
    assert [(e.company_id, e.details["via"], e.details["revision"]) for e in entries] == [
        (seeds.pk, "migration", 2),
        (remote.pk, "migration", 2),
    ]
    assert entries[0].details["before"]["memory"]["backend"] == "mem0"
    assert entries[0].details["after"] == seeds.config
    assert company_config(seeds).org_memory.extended_store.max_retrieved_per_query == 7
    assert company_config(remote).memory.embedder.model == "m"


def test_stored_configs_with_values_that_never_acted_are_reset_by_the_migration():
    """persistence 0010: knobs accepted under a setting that ignored them (weights under
    rrf, dual-mode and llm knobs under the simple strategy) go back to what ran, so every
    stored config still loads under the stricter rules, and behaves as before."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module(
        "persistence.migrations.0010_config_values_that_never_acted"
    )
    full_dump = CompanyFactory()
    bare = CompanyFactory()
    linear = CompanyFactory()
    dual = CompanyFactory()
    stored = parse_company_config({}).model_dump(mode="json")
    stored["memory"]["retrieval"].update(relevance_weight=0.6, recency_weight=0.4)
    stored["memory"]["consolidation"]["llm"].update(temperature=0.9, fallback_truncate_length=99)
    stored["memory"]["consolidation"]["archival"]["dual_mode"].update(
        enabled=True, summarization_model="tiny", max_facts=5
    )
    Company.objects.filter(pk=full_dump.pk).update(config=stored)
    Company.objects.filter(pk=bare.pk).update(
        config={"memory": {"retrieval": {"recency_weight": 0.5, "rrf_k": 20}}}
    )
    linear_config = {
        "memory": {
            "retrieval": {"personal_boost": 0.2, "relevance_weight": 0.6, "recency_weight": 0.4}
        }
    }
    Company.objects.filter(pk=linear.pk).update(config=linear_config)
    dual_config = {
        "memory": {
            "consolidation": {
                "strategy": "dual_mode",
                "archival": {"dual_mode": {"enabled": True, "summarization_model": "tiny"}},
            }
        }
    }
    Company.objects.filter(pk=dual.pk).update(config=dual_config)

    migration.reset_values_that_never_acted(apps, None)

    for company in (full_dump, bare, linear, dual):
        company.refresh_from_db()
    config = company_config(full_dump)
    retrieval = config.memory.retrieval
    assert (retrieval.fusion_strategy, retrieval.relevance_weight, retrieval.recency_weight) == (
        "rrf",
        0.7,
        0.3,
    )
    consolidation = config.memory.consolidation
    assert (consolidation.strategy, consolidation.archival.dual_mode.enabled) == ("simple", False)
    assert consolidation.archival.dual_mode.max_facts == 20
    assert (consolidation.llm.temperature, consolidation.llm.fallback_truncate_length) == (0.3, 99)
    assert bare.config == {"memory": {"retrieval": {"rrf_k": 20, "fusion_strategy": "rrf"}}}
    assert company_config(bare).memory.retrieval.fusion_strategy == "rrf"  # as it ran
    assert (linear.config, dual.config) == (linear_config, dual_config)  # they acted
    assert [c.config_revision for c in (full_dump, bare, linear, dual)] == [2, 2, 1, 1]
    entries = AuditEntry.objects.filter(action_type="company.config_changed").order_by("id")
    assert [(e.company_id, e.details["via"]) for e in entries] == [
        (full_dump.pk, "migration"),
        (bare.pk, "migration"),
    ]
    assert entries[1].details["before"] == {
        "memory": {"retrieval": {"recency_weight": 0.5, "rrf_k": 20}}
    }


def test_stored_settings_that_changed_nothing_are_dropped_by_the_migration():
    import importlib

    from django.apps import apps

    migration = importlib.import_module(
        "persistence.migrations.0011_company_config_settings_that_changed_nothing"
    )
    never = CompanyFactory()
    options_never = CompanyFactory()
    tool_based = CompanyFactory()
    untouched = CompanyFactory()
    evolver = {"evolver": {"enabled": True, "window_days": 14}}
    stored = {
        never: {"memory": {"consolidation": {"interval": "never"}, "procedural": evolver}},
        options_never: {
            "memory": {"options": {"consolidation_interval": "never"}, "procedural": evolver}
        },
        tool_based: {
            "memory": {"retrieval": {"strategy": "tool_based", "injection_point": "user"}}
        },
        untouched: {
            "memory": {
                "consolidation": {"interval": "weekly"},
                "procedural": evolver,
                "retrieval": {"strategy": "self_editing", "injection_point": "user"},
            }
        },
    }
    for company, config in stored.items():
        Company.objects.filter(pk=company.pk).update(config=config)
    migration.drop_settings_that_changed_nothing(apps, None)
    for company in stored:
        company.refresh_from_db()
    assert never.config == {
        "memory": {
            "consolidation": {"interval": "never"},
            "procedural": {"evolver": {"window_days": 14}},
        }
    }
    assert options_never.config["memory"]["procedural"] == {"evolver": {"window_days": 14}}
    assert tool_based.config == {"memory": {"retrieval": {"strategy": "tool_based"}}}
    assert untouched.config == stored[untouched]
    assert [c.config_revision for c in stored] == [2, 2, 2, 1]
    entries = AuditEntry.objects.filter(action_type="company.config_changed").order_by("id")
    assert [(e.company_id, e.details["via"], e.details["revision"]) for e in entries] == [
        (never.pk, "migration", 2),
        (options_never.pk, "migration", 2),
        (tool_based.pk, "migration", 2),
    ]
    assert entries[2].details["before"]["memory"]["retrieval"]["injection_point"] == "user"
    # the rails left behind tune an evolver that is now off: persistence 0013 drops them
    importlib.import_module(
        "persistence.migrations.0013_config_knobs_whose_setting_is_off"
    ).drop_knobs_whose_setting_is_off(apps, None)
    for company in stored:  # every stored config parses again
        company.refresh_from_db()
        company_config(company)
    assert never.config["memory"]["procedural"] == {"evolver": {}}
    assert company_config(never).memory.procedural.evolver.enabled is False


def test_stored_knobs_whose_setting_is_off_are_dropped_by_the_migration():
    """persistence 0013: a key set to a non-default value while the setting it tunes is off
    (now refused, ``config_value_needs_setting``) is dropped from stored configs so they
    parse again; a key at its default (a fully dumped config) and a knob whose setting is on
    are kept; the rewrite is audited with the config before."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module(
        "persistence.migrations.0013_config_knobs_whose_setting_is_off"
    )
    off = CompanyFactory()
    on = CompanyFactory()
    dumped = CompanyFactory()
    stored = {
        off: {
            "memory": {
                "procedural": {
                    "evolver": {"window_days": 14, "max_proposals_per_cycle": 10},
                    "capture": {"type": "failure", "min_quality_score": 6.0},
                    "pruning": {"strategy": "ttl", "max_age_days": 30, "max_entries": 50},
                    "propagation": {"max_propagation_targets": 3},
                },
                "consolidation": {
                    "wiki_export": {"export_root": "exports"},
                    "experience_compressor": {"enabled": False, "max_tokens": 300},
                    "archival": {"enabled": False, "age_threshold_days": 30},
                    "group_threshold": 5,
                },
                "fine_tune": {"epochs": 3},
                "extraction": {"enabled": False, "debounce_seconds": 5},
                "dream": {"enabled": False, "lookback_days": 3},
            }
        },
        on: {
            "memory": {
                "procedural": {"evolver": {"enabled": True, "window_days": 14}},
                "dream": {"lookback_days": 3},
            }
        },
        dumped: parse_company_config({}).model_dump(mode="json"),
    }
    for company, config in stored.items():
        Company.objects.filter(pk=company.pk).update(config=config)
    migration.drop_knobs_whose_setting_is_off(apps, None)
    for company in stored:
        company.refresh_from_db()
        company_config(company)  # parses again
    assert off.config == {
        "memory": {
            "procedural": {
                "evolver": {"max_proposals_per_cycle": 10},
                "capture": {"type": "failure"},
                "pruning": {"strategy": "ttl", "max_age_days": 30},
                "propagation": {},
            },
            "consolidation": {
                "wiki_export": {},
                "experience_compressor": {"enabled": False},
                "archival": {"enabled": False},
            },
            "fine_tune": {},
            "extraction": {"enabled": False},
            "dream": {"enabled": False},
        }
    }
    assert on.config == stored[on]
    assert dumped.config == stored[dumped]
    assert [c.config_revision for c in stored] == [2, 1, 1]
    entry = AuditEntry.objects.get(action_type="company.config_changed")
    assert (entry.company_id, entry.details["via"]) == (off.pk, "migration")
    assert entry.details["before"] == stored[off]
