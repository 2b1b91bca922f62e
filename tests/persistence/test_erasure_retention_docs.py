"""The docs list every record that outlives an agent's erasure (issue 34: the request log
kept an erased agent's queries verbatim for 30 days, and no page said so).

Every table with a foreign key to an agent is either deleted by the erasure (a registered
content kind that erases and is not append-only) or named in the "What outlives an erasure"
table of docs/operating/portability.md; so is every kind the erasure reports as retained."""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.conf import settings

from persistence.content_registry import content_kinds, table_is_append_only
from persistence.models import Agent

pytestmark = pytest.mark.django_db

PAGE = settings.BASE_DIR / "docs" / "operating" / "portability.md"


def _documented_tables() -> set[str]:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("### What outlives an erasure", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # no header
    assert rows, "the table is missing"
    return {name for row in rows for name in re.findall(r"`([a-z]+_[a-z]+)`", row.split("|")[1])}


def test_every_record_naming_an_agent_is_erased_or_documented_as_kept():
    erased = {
        kind.table
        for kind in content_kinds()
        if kind.erase is not None and not table_is_append_only(kind.table)
    }
    retained = {
        kind.table
        for kind in content_kinds()
        if kind.erase is None or table_is_append_only(kind.table)
    }
    naming_an_agent = {
        model._meta.db_table
        for model in apps.get_models()
        if any(
            field.many_to_one and field.related_model is Agent for field in model._meta.get_fields()
        )
    }
    documented = _documented_tables()
    assert naming_an_agent - erased - documented == set()
    assert retained - documented == set()
    assert documented & erased == set()  # a deleted record listed as kept is wrong too
    assert Agent._meta.db_table in documented  # the row itself is deactivated, not deleted
