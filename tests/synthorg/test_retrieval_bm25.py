import math

import pytest

from synthorg.retrieval import bm25


def test_idf_is_lucene_non_negative():
    assert bm25.idf(3, 2) == pytest.approx(math.log(1.6))
    assert bm25.idf(10, 10) == pytest.approx(math.log(1 + 0.5 / 10.5))
    assert bm25.idf(10, 10) > 0


def test_score_hand_computed():
    # docs: d1 = {deploy: 2, friday: 1} (len 3), d2 = {deploy: 1, databas: 1} (len 2),
    # d3 = {lunch: 1, menu: 1} (len 2); avgdl = 7/3; query "deploy" (df 2 of N 3)
    avgdl = 7 / 3
    expected_d1 = math.log(1.6) * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / avgdl))
    got = bm25.score(
        ["deploy", "deploy"],
        {"deploy": 2, "friday": 1},
        doc_length=3,
        doc_freqs={"deploy": 2},
        n_docs=3,
        avg_doc_length=avgdl,
    )
    assert got == pytest.approx(expected_d1)
    assert expected_d1 == pytest.approx(0.598186, abs=1e-6)
    assert bm25.term_score(0, doc_freq=1, n_docs=3, doc_length=2, avg_doc_length=2) == 0.0
