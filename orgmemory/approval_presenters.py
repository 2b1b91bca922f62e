"""Extension point: how an action type's approval items are presented, edited and timed.

Org memory decides approval items but knows no proposer. The app that files an action type
registers, in ``AppConfig.ready`` and beside its applier
(:func:`orgmemory.services.approvals.register_approval_applier`), an
:class:`ApprovalPresenter` naming:

* ``editable`` — the parts of the item's ``metadata["proposal"]`` an approver may edit
  before approving (edit-then-approve), with their limits; an action type without editable
  fields is never edited (``approval_not_editable``);
* ``stale_on_edit`` — proposal keys that are renderings of the editable parts, dropped when
  an approver edits (the applier renders them again from the edited parts);
* ``ttl`` — how long its items wait for a decision when the requester names none;
* ``verdicts`` — the plain-language meaning of the verdict name the proposer stores in the
  item's ``evidence["verdict"]``, and what approving does under it;
* ``template`` — the console partial that renders the proposal and its evidence on the
  item's page (given ``item``, ``proposal``, ``evidence``, ``verdict``, ``report_links``);
  without one the page shows the raw proposal;
* ``approve_hint`` — what approving does, shown above the approve button.

An action type nobody registered gets :data:`DEFAULT_PRESENTER` (1-day TTL, nothing
editable, no verdicts, the generic rendering).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType

DEFAULT_TTL = timedelta(days=1)
DEFAULT_APPROVE_HINT = "Approving records your decision; the requester acts on it."


@dataclass(frozen=True)
class EditableField:
    """One editable part of a proposal: a text (``max_chars``) or, with ``many``, a list of
    1 to ``max_items`` non-blank lines of at most ``max_chars`` each."""

    name: str
    label: str
    max_chars: int
    many: bool = False
    max_items: int = 0
    hint: str = ""


@dataclass(frozen=True)
class VerdictText:
    label: str
    meaning: str
    on_approve: str


@dataclass(frozen=True)
class ApprovalPresenter:
    editable: tuple[EditableField, ...] = ()
    stale_on_edit: tuple[str, ...] = ()
    ttl: timedelta = DEFAULT_TTL
    verdicts: Mapping[str, VerdictText] = field(default_factory=lambda: MappingProxyType({}))
    template: str = ""
    approve_hint: str = DEFAULT_APPROVE_HINT

    def editable_field(self, name: str) -> EditableField | None:
        return next((f for f in self.editable if f.name == name), None)

    def verdict(self, name: object) -> VerdictText | None:
        return self.verdicts.get(str(name or ""))


DEFAULT_PRESENTER = ApprovalPresenter()

_presenters: dict[str, ApprovalPresenter] = {}


def register_approval_presenter(action_type: str, presenter: ApprovalPresenter) -> None:
    """Let the app that files ``action_type`` say how its items are presented and edited."""
    _presenters[action_type] = presenter


def presenter_for(action_type: str) -> ApprovalPresenter:
    return _presenters.get(action_type, DEFAULT_PRESENTER)
