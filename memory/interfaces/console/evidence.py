"""The report linker org memory's item page calls (``orgmemory.evidence_links``): the
company's execution reports among the evidence ids, each linked to its console page."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.urls import reverse

from memory.procedural.models import ExecutionReport
from orgmemory.evidence_links import EvidenceLink
from persistence.models import Company


def report_linker(company: Company, report_ids: Sequence[str]) -> list[EvidenceLink]:
    ids = []
    for value in report_ids:
        try:
            ids.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    reports = (
        ExecutionReport.objects.filter(company=company, pk__in=ids)
        .select_related("agent")
        .only("id", "task_title", "task_type", "outcome", "agent__name")
    )
    return [
        EvidenceLink(
            id=str(r.pk),
            label=f"{r.agent.name}: {r.task_title or r.task_type or r.pk} ({r.outcome})",
            url=reverse("memory_console:execution", kwargs={"report_id": r.pk}),
        )
        for r in reports
    ]
