"""The sparse leg: BM25 in SQL against hand-computed scores, common-lexeme pruning."""

import math

import pytest

from memory.core.selectors.search import sparse as sparse_module
from tests.memory.core.selectors.search.helpers import RRF, contents, search, store
from tests.persistence.factories import AgentFactory, CompanyFactory

pytestmark = pytest.mark.django_db


def test_bm25_in_sql_matches_the_hand_computed_formula(rrf_agent, keyword_embedder):
    d1, d2, _ = store(
        rrf_agent, keyword_embedder, "deploy deploy friday", "deploy database", "lunch menu"
    )
    assert (d1.doc_length, d2.doc_length) == (3, 2)
    # Another agent's rows are outside the scope: they must not change N, df or avgdl.
    store(AgentFactory(company=rrf_agent.company), keyword_embedder, "deploy " * 30)

    result = search(rrf_agent, keyword_embedder, "Deploying!", legs=("sparse",), limit=10)
    assert contents(result) == ["deploy deploy friday", "deploy database"]
    avgdl = 7 / 3
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    expected = [
        idf * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / avgdl)),
        idf * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / avgdl)),
    ]
    assert [hit.sparse_score for hit in result.hits] == pytest.approx(expected)
    assert [hit.sparse_rank for hit in result.hits] == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_common_lexemes_score_candidates_but_do_not_find_them(keyword_embedder):
    """A lexeme in ≥ 20 % of the table's rows (ANALYZE statistics) no longer finds
    candidates; it still scores the ones the rare lexemes find, with df = share × N."""
    from tests.support.db_roles import owner_cursor

    rrf_agent = AgentFactory(company=CompanyFactory(config=RRF))
    store(rrf_agent, keyword_embedder, *[f"deploy step {i}" for i in range(40)])
    billing = store(rrf_agent, keyword_embedder, "billing deploy deploy", "billing invoices")
    with owner_cursor() as cursor:  # statistics are the owner's to refresh (autovacuum's)
        cursor.execute("ANALYZE memory_memory")
    common = sparse_module.common_lexemes(["deploy", "bill", "step"])
    assert set(common) == {"deploy", "step"} and common["deploy"] == pytest.approx(41 / 42)

    result = search(rrf_agent, keyword_embedder, "billing deploy", legs=("sparse",), limit=10)
    # the shorter document wins: "deploy" (df ≈ N) adds almost nothing to the other
    assert [hit.memory.pk for hit in result.hits] == [billing[1].pk, billing[0].pk]
    n, avgdl = 42, (40 * 3 + 3 + 2) / 42
    idf_bill = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    df_deploy = common["deploy"] * n
    idf_deploy = math.log(1 + (n - df_deploy + 0.5) / (df_deploy + 0.5))

    def term(idf, tf, dl):
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    assert [hit.sparse_score for hit in result.hits] == pytest.approx(
        [term(idf_bill, 1, 2), term(idf_bill, 1, 3) + term(idf_deploy, 2, 3)]
    )
    # a query of common lexemes only runs unchanged: every "deploy" row is a candidate
    alone = search(rrf_agent, keyword_embedder, "deploy", legs=("sparse",), limit=100)
    assert len(alone.hits) == 41


@pytest.mark.django_db(transaction=True)
def test_a_lexeme_concentrated_in_the_scope_is_common_there(keyword_embedder):
    """A lexeme in every row of one agent (its user's name) is a small share of the table
    but, read as if all its rows were the scope's, ≥ 80 % of the scope: common there (it
    scores with that estimated share), not in a scope holding the whole table."""
    from tests.support.db_roles import owner_cursor

    company = CompanyFactory(config=RRF)
    named, other = AgentFactory(company=company), AgentFactory(company=company)
    store(named, keyword_embedder, *[f"caroline step {i}" for i in range(10)])
    billing = store(named, keyword_embedder, "caroline billing")
    store(other, keyword_embedder, *[f"lunch menu {i}" for i in range(55)])
    with owner_cursor() as cursor:
        cursor.execute("ANALYZE memory_memory")
    table_share = 11 / 66
    # "carolin": the english stem
    assert sparse_module.common_lexemes(["carolin", "bill"]) == {}  # 0.17 < 0.2
    assert sparse_module.common_lexemes(["carolin", "bill"], scope_share=11 / 66) == {
        "carolin": pytest.approx(1.0)
    }
    assert sparse_module.common_lexemes(["carolin"], scope_share=0.5) == {}  # 0.33 < 0.8
    assert table_share < sparse_module.COMMON_LEXEME_SHARE

    # through the search: the agent's scope is 11 of the table's 66 live rows, so
    # "caroline" only scores the row "billing" finds (df = N: it adds nothing)
    result = search(named, keyword_embedder, "caroline billing", legs=("sparse",), limit=10)
    assert [hit.memory.pk for hit in result.hits] == [billing[0].pk]
    n, avgdl = 11, (10 * 3 + 2) / 11
    idf_bill = math.log(1 + (n - 1 + 0.5) / (1 + 0.5))
    idf_caroline = math.log(1 + (n - n + 0.5) / (n + 0.5))
    expected = sum(
        idf * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / avgdl)) for idf in (idf_bill, idf_caroline)
    )
    assert result.hits[0].sparse_score == pytest.approx(expected)


def test_a_large_scope_filters_the_rows_its_lexemes_find(rrf_agent, keyword_embedder):
    """Above ``SPARSE_SCOPE_BITMAP_MAX_ROWS`` live rows the scope is written as a filter (no
    b-tree bitmap of the whole scope): same rows, same scores, other agents and companies
    still out; below it the scope's indexes may serve it."""
    from django.db import connection

    store(rrf_agent, keyword_embedder, "deploy friday", "deploy database", "lunch menu")
    store(rrf_agent, keyword_embedder, "deploy shared runbook", shared=True)
    store(AgentFactory(company=rrf_agent.company), keyword_embedder, "deploy elsewhere")
    store(AgentFactory(company=CompanyFactory()), keyword_embedder, "deploy stranger", shared=True)

    def run():
        captured = []

        def capture(execute, sql, params, many, context):
            captured.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(capture):
            result = search(rrf_agent, keyword_embedder, "deploy", legs=("sparse",), limit=10)
        [statement] = [sql for sql in captured if "matched AS" in sql]
        matched = statement[statement.index("matched AS") : statement.index("df AS")]
        hits = [(hit.memory.content, hit.sparse_score) for hit in result.hits]
        return hits, matched

    indexed, indexed_sql = run()
    assert "m.agent_id = %s" in indexed_sql and "+ 0" not in indexed_sql
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sparse_module, "SPARSE_SCOPE_BITMAP_MAX_ROWS", 3)  # the scope holds 4
        filtered, filtered_sql = run()
    assert "m.company_id + 0 = %s AND m.agent_id + 0 = %s AND NOT m.is_shared" in filtered_sql
    assert "m.company_id + 0 = %s AND m.is_shared" in filtered_sql
    assert filtered == indexed
    assert sorted(content for content, _ in filtered) == [
        "deploy database", "deploy friday", "deploy shared runbook",
    ]  # fmt: skip
