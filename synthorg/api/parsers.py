"""The JSON parser every API view uses (``DEFAULT_PARSER_CLASSES``).

DRF's parser plus the checks of :mod:`synthorg.api.input_safety`: nesting deeper than
``MAX_JSON_DEPTH`` (also caught when the decoder itself runs out of stack), NUL characters
and lone surrogates anywhere in the document, and a body that is not valid UTF-8
(``invalid_utf8``) answer 400 with a specific ``code`` before any view or serializer runs.
"""

from __future__ import annotations

from rest_framework.exceptions import ErrorDetail, ParseError
from rest_framework.parsers import JSONParser

from synthorg.api.input_safety import (
    INVALID_UTF8,
    TOO_DEEP,
    UnsafeInputError,
    check_json_value,
)


class JSONBody(dict):
    """A request body that was a JSON object, as this parser returns it: serializers know
    its numbers arrived as JSON numbers, unlike a query string's or a form's text
    (:func:`synthorg.api.serializers.reject_loose_numbers`). Otherwise a plain ``dict``."""


class UnsafeInputParseError(ParseError):
    """A 400 whose problem carries the offending field (``errors``)."""

    def __init__(self, message: str, *, code: str, field: str | None) -> None:
        super().__init__(ErrorDetail(message, code=code))
        self.field = field


class SafeJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise UnsafeInputParseError(TOO_DEEP, code="json_too_deep", field=None) from exc
        except ParseError as exc:
            if isinstance(exc.__context__, UnicodeDecodeError):
                raise UnsafeInputParseError(INVALID_UTF8, code="invalid_utf8", field=None) from exc
            raise
        try:
            check_json_value(data)
        except UnsafeInputError as exc:
            raise UnsafeInputParseError(exc.message, code=exc.code, field=exc.field) from exc
        return JSONBody(data) if isinstance(data, dict) else data
