"""Okapi BM25 reference math (k1 = 1.2, b = 0.75, Lucene's non-negative idf).

``memory.core.selectors.search.sparse`` and ``orgmemory.selectors.retrieval`` compute the same
formula in SQL (:func:`sql_score`) over the trigger-maintained ``search_vector`` (term
frequencies) and ``doc_length``; tests check the SQL and this reference agree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

K1 = 1.2
B = 0.75


def idf(n_docs: int, doc_freq: int) -> float:
    """``ln(1 + (N − df + 0.5) / (df + 0.5))``."""
    return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def term_score(
    tf: int,
    *,
    doc_freq: int,
    n_docs: int,
    doc_length: int,
    avg_doc_length: float,
    k1: float = K1,
    b: float = B,
) -> float:
    if tf <= 0:
        return 0.0
    norm = 1.0 - b + b * (doc_length / avg_doc_length if avg_doc_length > 0 else 0.0)
    return idf(n_docs, doc_freq) * tf * (k1 + 1.0) / (tf + k1 * norm)


def score(
    query_terms: Iterable[str],
    doc_tf: Mapping[str, int],
    *,
    doc_length: int,
    doc_freqs: Mapping[str, int],
    n_docs: int,
    avg_doc_length: float,
    k1: float = K1,
    b: float = B,
) -> float:
    """BM25 of one document for the *distinct* ``query_terms``."""
    return sum(
        term_score(
            doc_tf.get(term, 0),
            doc_freq=doc_freqs.get(term, 0),
            n_docs=n_docs,
            doc_length=doc_length,
            avg_doc_length=avg_doc_length,
            k1=k1,
            b=b,
        )
        for term in dict.fromkeys(query_terms)
    )


def sql_score(*, tf: str, df: str, n: str, dl: str, avgdl: str) -> str:
    """The SQL expression of one term's BM25 contribution, for a ``sum(...)`` per document.

    Arguments are SQL expressions (float8) for the term frequency, the document frequency,
    the number of documents, the document's length and the average length. An average
    length of 0 (an empty scope) scores as if every document had average length.
    """
    k1, b = f"{K1!r}::float8", f"{B!r}::float8"
    return (
        f"ln(1 + ({n} - {df} + 0.5) / ({df} + 0.5)) * {tf} * ({k1} + 1) "
        f"/ ({tf} + {k1} * (1 - {b} + {b} * CASE WHEN {avgdl} > 0 "
        f"THEN {dl} / {avgdl} ELSE 0 END))"
    )


#: A matched term's frequency in a document, from an unnested tsvector row ``t`` (a
#: stripped position list counts once).
SQL_TF = "coalesce(array_length(t.positions, 1), 1)::float8"


def sql_query_terms(search_vector: str, lexemes: str = "%s") -> str:
    """A set-returning SQL expression: the entries of ``search_vector`` (an unweighted
    tsvector) for the lexemes of the ``lexemes`` parameter (a text array), one row ``t`` per
    term.

    The query's lexemes are marked with weight A, then kept by weight: one C call per row
    instead of unnesting every lexeme, which is faster in the memory sparse leg (measured:
    docs/benchmarks/latency.md#smaller-levers-in-the-search-path).
    """
    return f"unnest(ts_filter(setweight({search_vector}, 'A', {lexemes}::text[]), '{{a}}')) AS t"
