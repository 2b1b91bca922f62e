"""Optional filters for selectors (pure queryset helper)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet


def where_given(qs: QuerySet, **lookups: Any) -> QuerySet:
    """``qs`` filtered by each lookup whose value is not ``None`` (``None`` = not asked for)."""
    given = {lookup: value for lookup, value in lookups.items() if value is not None}
    return qs.filter(**given) if given else qs
