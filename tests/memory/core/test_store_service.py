import pytest

from memory.core.domain import MemoryStoreRequest
from memory.core.models.memory import Memory
from memory.core.services.store import memory_store, memory_store_batch
from tests.persistence.factories import AgentFactory

pytestmark = pytest.mark.django_db


def req(content, **kw):
    return MemoryStoreRequest(content=content, category=kw.pop("category", "semantic"), **kw)


def test_store_embeds_with_default_model_and_dedups():
    agent = AgentFactory()
    first = memory_store(agent=agent, request=req("The deploy runs every Friday at noon."))
    assert first.stored and not first.deduplicated and first.embedding_status == "ready"
    row = Memory.objects.get(pk=first.id)
    assert row.embedder_id and len(row.embedding) == 384
    dup = memory_store(agent=agent, request=req("the deploy runs every friday at noon"))
    assert dup.id == first.id and dup.deduplicated
    other = memory_store(agent=agent, request=req("Lunch is served at noon on Fridays."))
    assert other.id != first.id
    assert Memory.objects.filter(agent=agent).count() == 2


def test_batch_intra_dedup_and_supersede():
    agent = AgentFactory()
    old = memory_store(agent=agent, request=req("The database password rotates monthly."))
    results = memory_store_batch(
        agent=agent,
        requests=[
            req("Alpha team owns the billing service."),
            req("alpha team owns the billing service"),
            req("The database password rotates weekly now.", supersedes=(old.id,)),
        ],
    )
    assert results[1].id == results[0].id and results[1].deduplicated
    row = Memory.objects.get(pk=old.id)
    assert row.superseded_by_id == results[2].id and row.superseded_at is not None
    assert Memory.objects.filter(agent=agent).count() == 3


def test_gate_handles_quotes_backslashes_and_stop_words():
    agent = AgentFactory()
    odd = "O'Brien's path is C:\\temp\\x with 'quoted' \\\\ terms & | ! (tsquery) syntax:*"
    first = memory_store(agent=agent, request=req(odd))
    again = memory_store(agent=agent, request=req(odd.upper()))
    assert again.id == first.id and again.deduplicated
    # Nothing but stop words: no terms to compare, so nothing is a duplicate.
    a = memory_store(agent=agent, request=req("the and of"))
    b = memory_store(agent=agent, request=req("the and of"))
    assert a.id != b.id and not b.deduplicated


def test_gate_ignores_superseded_and_expired_memories():
    from datetime import timedelta

    from django.utils import timezone

    from tests.memory.factories import MemoryFactory

    agent = AgentFactory()
    text = "The on-call rotation changes every Monday morning."
    expired = MemoryFactory(
        agent=agent, content=text, expires_at=timezone.now() - timedelta(seconds=1)
    )
    first = memory_store(agent=agent, request=req(text))
    assert first.id != expired.id and not first.deduplicated
    newer = memory_store(
        agent=agent, request=req("Rotation is now weekly.", supersedes=(first.id,))
    )
    again = memory_store(agent=agent, request=req(text))
    assert again.id not in (first.id, newer.id) and not again.deduplicated


def _distinct_words(count: int, seed: int) -> list[str]:
    """``count`` distinct letter-only words the english parser keeps as they are."""
    import random

    rng = random.Random(seed)
    letters = "bcdfghjklmnpqrstvwxz"
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choice(letters) for _ in range(9)))
    return sorted(words)


def test_gate_handles_a_batch_with_more_distinct_terms_than_a_tsquery_nests():
    """10 × 20k-char memories (~20k distinct terms) once overflowed the gate's tsquery."""
    agent = AgentFactory()
    words = _distinct_words(20_000, seed=14)
    contents = [" ".join(words[i * 2_000 : (i + 1) * 2_000])[:20_000] for i in range(10)]
    memory_store(agent=agent, request=req("bcdfghjkl " + contents[0][:200]))
    results = memory_store_batch(agent=agent, requests=[req(c) for c in contents])
    assert [r.stored for r in results] == [True] * 10
    assert not any(r.deduplicated for r in results)
    assert Memory.objects.filter(agent=agent).count() == 11
    # The gate still finds a duplicate among that many terms.
    again = memory_store_batch(agent=agent, requests=[req(contents[3])])
    assert again[0].deduplicated is True
    assert again[0].id == results[3].id


def test_the_gate_restores_the_planner_setting_inside_the_callers_transaction():
    """The gate turns nested loops off for its own statement only (one query string with the
    restore), so the rest of the caller's transaction plans as configured."""
    from django.db import connection

    agent = AgentFactory()

    def nestloop():
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('enable_nestloop')")
            return cursor.fetchone()[0]

    first = memory_store(agent=agent, request=req("The deploy runs every Friday at noon."))
    assert nestloop() == "on"  # inside the test's transaction, after both gate passes
    dup = memory_store(agent=agent, request=req("the deploy runs every friday at noon"))
    assert (dup.id, dup.deduplicated) == (first.id, True)
    assert nestloop() == "on"


def test_the_stores_small_statements_are_prepared_statements_of_the_connection():
    """The writers' lock, the lexemes and the gate's change counter (read twice per store)
    are parsed once per connection; PostgreSQL runs the first two on a generic plan from
    their sixth run (the counter's generic plan costs more than its custom plans: it keeps
    planning that one)."""
    from django.db import connection

    agent = AgentFactory()
    for i in range(7):
        memory_store(agent=agent, request=req(f"Release {i} ships on day {i} of the sprint."))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT statement, custom_plans + generic_plans, generic_plans > 0 "
            "FROM pg_prepared_statements WHERE statement LIKE ANY(%s) ORDER BY statement",
            [["%pg_advisory_xact_lock%", "%to_tsvector('english'::regconfig, t.c)%",
              "%FROM memory_gate_scope%"]],
        )  # fmt: skip
        rows = [(sql.split()[1][:20], runs, generic) for sql, runs, generic in cursor.fetchall()]
    assert rows == [
        ("coalesce(sum(version", 14, False),
        ("pg_advisory_xact_loc", 7, True),
        ("t.ord,", 7, True),
    ]
