"""The sparse leg: BM25 in SQL against hand-computed scores, common-lexeme pruning."""

import math

import pytest

from memory.selectors.search import sparse as sparse_module
from tests.memory.selectors.search.helpers import RRF, contents, search, store
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
