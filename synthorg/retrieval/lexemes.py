"""A query's english lexemes and the tsquery that finds rows holding any of them.

Both the memory sparse leg and org-fact ranking match on the lexemes Postgres' ``english``
configuration produces (stemmed, stop words removed), the same configuration the
``search_vector`` columns are built with. No Django import: the caller passes a DB-API
cursor.
"""

from __future__ import annotations

from collections.abc import Iterable

#: The distinct lexemes of the query text (sorted, as ``tsvector_to_array`` returns them).
QUERY_LEXEMES_SQL = "SELECT tsvector_to_array(to_tsvector('english'::regconfig, %s))"


def query_lexemes(cursor, text: str) -> list[str]:
    """The distinct english lexemes of ``text`` (what a sparse leg matches on)."""
    cursor.execute(QUERY_LEXEMES_SQL, [text])
    (lexemes,) = cursor.fetchone()
    return list(lexemes or [])


def quote_lexeme(lexeme: str) -> str:
    """``lexeme`` as a quoted tsquery operand (backslashes and quotes escaped)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def or_tsquery(lexemes: Iterable[str]) -> str:
    """A tsquery text matching a document that holds any of ``lexemes`` (``'a' | 'b'``)."""
    return " | ".join(quote_lexeme(lexeme) for lexeme in lexemes)
