"""A query's english lexemes and the tsquery that finds rows holding any of them.

Both the memory sparse leg and org-fact ranking match on the lexemes Postgres' ``english``
configuration produces (stemmed, stop words removed), the same configuration the
``search_vector`` columns are built with. No Django import: the caller passes a DB-API
cursor (or, for the prepared form, its Django connection).
"""

from __future__ import annotations

from collections.abc import Iterable

from synthorg.db.prepared import execute_prepared

#: The distinct lexemes of the query text (sorted, as ``tsvector_to_array`` returns them).
QUERY_LEXEMES_EXPR = "tsvector_to_array(to_tsvector('english'::regconfig, %s))"
QUERY_LEXEMES_SQL = f"SELECT {QUERY_LEXEMES_EXPR}"


def query_lexemes(cursor, text: str) -> list[str]:
    """The distinct english lexemes of ``text`` (what a sparse leg matches on)."""
    cursor.execute(QUERY_LEXEMES_SQL, [text])
    (lexemes,) = cursor.fetchone()
    return list(lexemes or [])


def query_lexemes_prepared(connection, text: str) -> list[str]:
    """:func:`query_lexemes` as a prepared statement of Django ``connection``
    (:mod:`synthorg.db.prepared`), for the paths that run it on every request."""
    (lexemes,) = execute_prepared(connection, QUERY_LEXEMES_SQL, [text])[0]
    return list(lexemes or [])


def quote_lexeme(lexeme: str) -> str:
    """``lexeme`` as a quoted tsquery operand (backslashes and quotes escaped)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def or_tsquery(lexemes: Iterable[str]) -> str:
    """A tsquery text matching a document that holds any of ``lexemes`` (``'a' | 'b'``)."""
    return " | ".join(quote_lexeme(lexeme) for lexeme in lexemes)
