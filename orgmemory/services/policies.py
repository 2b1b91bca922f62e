"""Core policies: human-authored ``core_policy`` facts, in the order agents receive them.

One path for every way a human changes them — the Core policies page (add, edit, retire,
reorder) and a config save whose ``org_memory.core_policies`` list is set (YAML, API,
``load_company_config --user``): each change is a fact version through
:mod:`orgmemory.services.facts` (append-only log, optimistic concurrency, an audit entry with
the old and new text), and the order is each fact's ``position`` (reordering is audited with
the old and new order).

A config list set *without* a human (a company created from a file, ``load_company_config``
without ``--user``) cannot become facts — a fact's human author is a user — so it is stored
in the config as before, unversioned, until a human adopts it (:func:`core_policies_adopt`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction

from orgmemory.models import OperationLogEntry, OrgFact
from orgmemory.selectors.policies import policies
from orgmemory.services.facts import (
    author_for,
    deny_write,
    fact_publish,
    fact_retract,
)
from orgmemory.write_access import explain_write_access
from persistence.access import UPDATE, require_write
from persistence.audit_actions import AuditAction
from persistence.models import CompanyMembership
from persistence.principal import Principal
from persistence.selectors.config import company_config
from persistence.services.audit import audit_record
from persistence.services.companies import company_config_set
from synthorg.company_config import CompanyConfig
from synthorg.enums import OrgFactCategory
from synthorg.errors import ConflictError, InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from persistence.models import Company

CATEGORY = str(OrgFactCategory.CORE_POLICY)
POLICY_NOT_FOUND = "No live core policy with this id exists in your company."
ORDER_NOT_A_PERMUTATION = "The new order must list every live core policy exactly once."
ORDER_CONFLICT = (
    "The core policies changed since you loaded them (added or retired); reload and reorder."
)
VERSIONED_WITHOUT_USER = (
    "This company's core policies are versioned facts with human authors; change them on "
    "the Core policies page, or load the config as a user (load_company_config --user)."
)
NOTHING_TO_ADOPT = "There are no unversioned core policies in the company config."

ACTION_REORDERED = AuditAction.CORE_POLICY_REORDERED


def _live_policy_rows(company: Company, *, lock: bool = False) -> list[OrgFact]:
    rows = OrgFact.objects.filter(
        company=company, category=CATEGORY, retracted_at__isnull=True
    ).order_by("created_at", "fact_id")
    if lock:
        rows = rows.select_for_update()
    return sorted(rows, key=lambda fact: (fact.position is None, fact.position or 0))


def _policy_or_404(company: Company, fact_id) -> OrgFact:
    for fact in _live_policy_rows(company):
        if str(fact.fact_id) == str(fact_id):
            return fact
    raise NotFoundError(POLICY_NOT_FOUND, code="policy_not_found")


def _require_may_write(company: Company, actor: Principal, operation: str) -> None:
    if actor.is_human:
        require_write(actor, "core_policy", UPDATE)
    decision = explain_write_access(
        company_config(company).org_memory.write_access,
        OrgFactCategory.CORE_POLICY,
        author_for(actor),
    )
    if not decision.allowed:
        raise deny_write(company=company, principal=actor, decision=decision, operation=operation)


@transaction.atomic
def policy_add(*, company: Company, actor: Principal, content: str) -> OperationLogEntry:
    """A new core policy at the end of the block (version 1)."""
    entry = fact_publish(company=company, actor=actor, content=content, category=CATEGORY)
    rows = _live_policy_rows(company, lock=True)
    positions = [row.position for row in rows if row.position is not None]
    OrgFact.objects.filter(pk=entry.fact_id).update(position=max(positions, default=-1) + 1)
    return entry


def policy_edit(
    *, company: Company, actor: Principal, fact_id, content: str, expected_version: int | None
) -> OperationLogEntry:
    """A new version of a live core policy; ``expected_version`` guards against a lost edit."""
    fact = _policy_or_404(company, fact_id)
    return fact_publish(
        company=company,
        actor=actor,
        content=content,
        category=CATEGORY,
        fact_id=fact.fact_id,
        expected_version=expected_version,
    )


def policy_retire(
    *, company: Company, actor: Principal, fact_id, expected_version: int | None, reason: str = ""
) -> OperationLogEntry:
    """Retract a core policy: it leaves the block; its versions stay in the history."""
    fact = _policy_or_404(company, fact_id)
    return fact_retract(
        company=company,
        actor=actor,
        fact_id=fact.fact_id,
        expected_version=expected_version,
        reason=reason,
    )


@transaction.atomic
def policy_reorder(*, company: Company, actor: Principal, fact_ids: list) -> list[OrgFact]:
    """Put the live core policies in ``fact_ids``' order (every live one, exactly once).

    A list naming a policy that is no longer live, or missing one added meanwhile, is a
    409 ``policy_order_conflict``: the editor's view is stale.
    """
    _require_may_write(company, actor, "reorder")
    rows = _live_policy_rows(company, lock=True)
    wanted = [str(fact_id) for fact_id in fact_ids]
    if len(set(wanted)) != len(wanted):
        raise InvalidInputError(ORDER_NOT_A_PERMUTATION, code="policy_order_invalid")
    if set(wanted) != {str(row.fact_id) for row in rows}:
        raise ConflictError(ORDER_CONFLICT, code="policy_order_conflict")
    before = [str(row.fact_id) for row in rows]
    by_id = {str(row.fact_id): row for row in rows}
    ordered = [by_id[fact_id] for fact_id in wanted]
    if before == wanted and all(row.position == index for index, row in enumerate(ordered)):
        return ordered
    for index, row in enumerate(ordered):
        row.position = index
    OrgFact.objects.bulk_update(ordered, ["position"])
    audit_record(
        company=company,
        action_type=ACTION_REORDERED,
        principal=actor,
        target_type="org_fact",
        target_id="",
        details={"old_order": before, "new_order": wanted},
    )
    return ordered


def _reconcile(company: Company, actor: Principal, desired: list[str]) -> None:
    """Make the live core policies exactly ``desired``, in order, with the fewest versions.

    Texts already live are kept; the remaining desired texts replace the remaining live
    policies in order (a new version each: the audit has old and new text); extra texts
    are added; extra live policies are retired. Then the order is ``desired``'s.
    """
    rows = _live_policy_rows(company)
    unused = list(rows)
    kept: dict[int, OrgFact] = {}
    for index, text in enumerate(desired):
        match = next((row for row in unused if row.content == text), None)
        if match is not None:
            unused.remove(match)
            kept[index] = match
    order: list[str] = []
    for index, text in enumerate(desired):
        if index in kept:
            order.append(str(kept[index].fact_id))
            continue
        if unused:
            row = unused.pop(0)
            entry = policy_edit(
                company=company,
                actor=actor,
                fact_id=row.fact_id,
                content=text,
                expected_version=row.version,
            )
        else:
            entry = policy_add(company=company, actor=actor, content=text)
        order.append(str(entry.fact_id))
    for row in unused:
        policy_retire(
            company=company,
            actor=actor,
            fact_id=row.fact_id,
            expected_version=row.version,
            reason="removed from the company config's core_policies",
        )
    if order:
        policy_reorder(company=company, actor=actor, fact_ids=order)


def _human_principal(company: Company, principal, user) -> Principal | None:
    if principal is not None and getattr(principal, "is_human", False):
        return principal
    if user is None:
        return None
    role = (
        CompanyMembership.objects.filter(company=company, user=user)
        .values_list("role", flat=True)
        .first()
    )
    return Principal.for_human(user, company, role or "admin")


def core_policies_config_applier(
    *, company: Company, config: CompanyConfig, previous: CompanyConfig | None, principal, user
) -> CompanyConfig:
    """Registered with ``persistence.services.companies.register_config_applier``.

    ``org_memory.core_policies`` left out of a save: the policies are untouched (an
    unversioned stored list is carried over). Set, with a human: the list becomes the live
    core policies (:func:`_reconcile`) and the stored list is emptied. Set without a human:
    stored unversioned as before, unless the company already has versioned policies the
    list would contradict (409 ``core_policies_versioned``).
    """
    org = config.org_memory
    legacy = previous.org_memory.core_policies if previous is not None else ()
    if "core_policies" not in org.model_fields_set:
        return _with_policies(config, legacy)
    desired = list(org.core_policies)
    actor = _human_principal(company, principal, user)
    if actor is None:
        versioned = [row.content for row in _live_policy_rows(company)]
        if versioned and desired != list(legacy) + versioned:
            raise ConflictError(VERSIONED_WITHOUT_USER, code="core_policies_versioned")
        return _with_policies(config, legacy if versioned else tuple(desired))
    _reconcile(company, actor, desired)
    return _with_policies(config, ())


def _with_policies(config: CompanyConfig, texts) -> CompanyConfig:
    org = config.org_memory.model_copy(update={"core_policies": tuple(texts)})
    return config.model_copy(update={"org_memory": org})


def core_policies_for_editing(*, company: Company, data: dict) -> dict:
    """The config as an editor shows it: ``org_memory.core_policies`` is the live list
    (what agents receive), so saving it unchanged changes nothing."""
    org = dict(data.get("org_memory") or {})
    org["core_policies"] = [policy.content for policy in policies(company=company)]
    return {**data, "org_memory": org}


def core_policies_adopt(*, company: Company, actor: Principal) -> None:
    """Version a config list stored without a human: each text becomes a fact by ``actor``."""
    stored = company_config(company)
    if not stored.org_memory.core_policies:
        raise InvalidInputError(NOTHING_TO_ADOPT, code="no_policies_to_adopt")
    data = core_policies_for_editing(company=company, data=stored.model_dump(mode="json"))
    company_config_set(company=company, data=data, principal=actor, via="core_policies_adopt")
