"""The shared lexeme helpers: a query's english lexemes and the OR-tsquery over them."""

import pytest
from django.db import connection

from synthorg.retrieval.lexemes import or_tsquery, query_lexemes, quote_lexeme


def test_quoting_escapes_quotes_and_backslashes():
    assert quote_lexeme("o'neil") == "'o''neil'"
    assert quote_lexeme("a\\b") == "'a\\\\b'"
    assert or_tsquery(["deploy", "friday"]) == "'deploy' | 'friday'"
    assert or_tsquery([]) == ""


@pytest.mark.django_db
def test_lexemes_are_stemmed_without_stop_words_and_parse_back_as_a_tsquery():
    with connection.cursor() as cursor:
        lexemes = query_lexemes(cursor, "When are the deployments of O'Neil's services?")
        assert lexemes == sorted(lexemes) and "deploy" in lexemes and "the" not in lexemes
        cursor.execute("SELECT %s::tsquery::text", [or_tsquery([*lexemes, "it's \\ odd"])])
        (text,) = cursor.fetchone()
    assert "'deploy'" in text and "'it''s \\\\ odd'" in text
