import pytest

from memory.core.retrieval.diversity import bigram_jaccard, mmr_rerank, word_bigrams

A = ("A", "the cat sat on the mat", 1.0)
B = ("B", "the cat sat on the mat today", 0.9)
C = ("C", "dogs run fast in parks", 0.8)


def rerank(items, lam, **kw):
    return [
        i[0]
        for i in mmr_rerank(
            items, score=lambda i: i[2], text=lambda i: i[1], diversity_lambda=lam, **kw
        )
    ]


def test_bigram_jaccard_hand_computed():
    assert word_bigrams("The cat sat") == {("the", "cat"), ("cat", "sat")}
    assert bigram_jaccard(A[1], B[1]) == pytest.approx(5 / 6)
    assert bigram_jaccard(A[1], C[1]) == 0.0
    assert bigram_jaccard("word", "word") == 0.0  # fewer than two words: no bigrams


def test_mmr_promotes_the_diverse_candidate():
    # step 2: B = 0.7·0.9 − 0.3·5/6 = 0.38 < C = 0.7·0.8 − 0 = 0.56
    assert rerank([A, B, C], 0.7) == ["A", "C", "B"]


def test_lambda_one_keeps_order_and_custom_similarity():
    assert rerank([A, B, C], 1.0) == ["A", "B", "C"]
    assert rerank([A, B, C], 0.7, similarity_fn=lambda a, b: 0.0) == ["A", "B", "C"]
    with pytest.raises(ValueError):
        rerank([A], 1.5)
