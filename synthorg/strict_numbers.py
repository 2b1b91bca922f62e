"""JSON numbers are numbers: ``true`` is not ``1`` and ``"60"`` is not ``60``.

pydantic's lax mode (what ``model_validate`` on a decoded JSON body runs) turns a boolean or
a numeric string into an integer or float, so ``retry_count: true`` was stored as 1 and
``ttl_seconds: "60"`` as 60. Full strict mode is not an option for request models: in
Python mode it also refuses a string for an enum, a UUID or a datetime, which JSON can only
send as strings. :class:`StrictNumbersModel` is a base that refuses exactly the loose
numbers: a boolean or a string given for a field whose type is ``int`` or ``float``
(optionally ``| None``), with pydantic's own error types (``int_type`` / ``float_type``).
An integer for a ``float`` field stays accepted (JSON has one number type).

Pure module: no Django import.
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

LOOSE_NUMBER = "Input should be a valid {expected}, not {got}"


def _numeric_kind(annotation: Any) -> str | None:
    """``"integer"`` / ``"number"`` for ``int`` / ``float`` (or ``X | None``), else None."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        found = {_numeric_kind(arg) for arg in args}
        return found.pop() if len(found) == 1 and None not in found else None
    if annotation is int:
        return "integer"
    if annotation is float:
        return "number"
    return None


@functools.cache
def _field_kind(model: type[BaseModel], name: str) -> str | None:
    return _numeric_kind(model.model_fields[name].annotation)


class StrictNumbersModel(BaseModel):
    """Base of request models whose numbers must arrive as JSON numbers."""

    @field_validator("*", mode="before")
    @classmethod
    def _refuse_loose_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool | str) and info.field_name is not None:
            kind = _field_kind(cls, info.field_name)
            if kind is not None:
                raise PydanticCustomError(
                    "int_type" if kind == "integer" else "float_type",
                    LOOSE_NUMBER,
                    {
                        "expected": kind,
                        "got": "a boolean" if isinstance(value, bool) else "a string",
                    },
                )
        return value
