"""Extension point: turn the report ids in an approval item's evidence into console links.

Org memory knows evidence only as ids; the app that owns execution reports (memory) registers
a linker in ``AppConfig.ready`` that returns, for the ids of the company's reports, a label
and the URL of the report's console page. Ids no linker knows are shown unlinked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from persistence.models import Company


@dataclass(frozen=True)
class EvidenceLink:
    id: str
    label: str
    url: str


ReportLinker = Callable[["Company", Sequence[str]], list[EvidenceLink]]
_linkers: list[ReportLinker] = []


def register_report_linker(linker: ReportLinker) -> None:
    if linker not in _linkers:
        _linkers.append(linker)


def report_links(*, company: Company, report_ids: Sequence[str]) -> list[EvidenceLink]:
    """Links for ``report_ids`` in their order; an id no linker resolves is left out."""
    ids = [str(r) for r in report_ids][:MAX_LINKS]
    found: dict[str, EvidenceLink] = {}
    for linker in _linkers:
        for link in linker(company, ids):
            found.setdefault(link.id, link)
    return [found[i] for i in ids if i in found]


#: an item's page links at most this many reports (the rest stay in the raw evidence)
MAX_LINKS = 100
