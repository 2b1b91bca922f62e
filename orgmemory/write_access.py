"""Who may write which org-fact category (pure: no Django import).

The rules come from the company's ``org_memory.write_access`` config
(:class:`synthorg.company_config.org_memory.WriteAccessConfig`):

* a category with no rule denies everyone (humans included);
* a human may write when the rule has ``human_allowed``;
* an agent may write when the rule names a minimum ``allowed_seniority`` and the agent's
  seniority is at least that (``core_policy`` can never name one: humans only), and — each
  only when the rule sets it — its role is one of ``allowed_roles``, its department one of
  ``allowed_departments`` and its autonomy at least ``min_autonomy``.

:func:`explain_write_access` says why; :func:`check_write_access` and
:func:`require_write_access` are the spec's boolean and raising forms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orgmemory.domain import OrgFactAuthor
from synthorg.company_config.org_memory import (
    AUTONOMY_ORDER,
    CategoryWriteRule,
    WriteAccessConfig,
)
from synthorg.enums import OrgFactCategory
from synthorg.errors import AccessDeniedError

NO_RULE = "No write rule exists for category '{category}': nobody may write it."
HUMANS_NOT_ALLOWED = "Humans may not write category '{category}'."
HUMAN_ONLY = "Category '{category}' is written by humans only."
SENIORITY_TOO_LOW = (
    "Category '{category}' needs seniority '{required}' or above; the author is '{actual}'."
)
ROLE_NOT_ALLOWED = (
    "Category '{category}' is written by the roles {allowed}; the author's role is {actual!r}."
)
DEPARTMENT_NOT_ALLOWED = (
    "Category '{category}' is written by the departments {allowed}; the author's department "
    "is {actual!r}."
)
AUTONOMY_TOO_LOW = (
    "Category '{category}' needs autonomy '{required}' or above; the author's is '{actual}'."
)
WRITE_DENIED = "Write to org memory denied: {reason}"
CORE_POLICY_HUMAN_AUTHORED = (
    "Core policies are authored by humans only; an agent can neither write one nor have a "
    "request to write one approved."
)


@dataclass(frozen=True)
class WriteAccessDecision:
    allowed: bool
    category: OrgFactCategory
    rule: CategoryWriteRule | None
    reason: str = ""

    @property
    def can_request(self) -> bool:
        """Whether a denied agent may file the write as a request for human approval.

        Only when a human could approve it: the category has a rule that lets humans write.
        Never for ``core_policy``: an approved request records the agent as the author, and
        core policies are human-authored (a human writes them on the Core policies page).
        """
        return (
            not self.allowed
            and self.category != OrgFactCategory.CORE_POLICY
            and self.rule is not None
            and self.rule.human_allowed
        )

    def problem_extra(self, *, author_is_human: bool) -> dict[str, Any]:
        """The members a 403 carries: the rule that denied the write and what to do next."""
        return {
            "category": str(self.category),
            "rule": None if self.rule is None else self.rule.model_dump(mode="json"),
            "reason": self.reason,
            "can_request": self.can_request and not author_is_human,
        }


def explain_write_access(
    config: WriteAccessConfig, category: OrgFactCategory, author: OrgFactAuthor
) -> WriteAccessDecision:
    category = OrgFactCategory(category)
    rule = config.rules.get(category)
    if rule is None:
        return WriteAccessDecision(False, category, None, NO_RULE.format(category=category))
    if author.is_human:
        if rule.human_allowed:
            return WriteAccessDecision(True, category, rule)
        return WriteAccessDecision(
            False, category, rule, HUMANS_NOT_ALLOWED.format(category=category)
        )
    if rule.allowed_seniority is None:
        return WriteAccessDecision(False, category, rule, HUMAN_ONLY.format(category=category))
    if author.seniority is None or not author.seniority.at_least(rule.allowed_seniority):
        reason = SENIORITY_TOO_LOW.format(
            category=category, required=rule.allowed_seniority, actual=author.seniority
        )
        return WriteAccessDecision(False, category, rule, reason)
    reason = _agent_dimension_denial(rule, category, author)
    if reason:
        return WriteAccessDecision(False, category, rule, reason)
    return WriteAccessDecision(True, category, rule)


def _same_name(value: str) -> str:
    return " ".join(value.split()).casefold()


def _agent_dimension_denial(
    rule: CategoryWriteRule, category: OrgFactCategory, author: OrgFactAuthor
) -> str:
    """Why the rule's role, department or autonomy dimension denies ``author`` ("" if none
    does)."""
    if rule.allowed_roles and _same_name(author.role) not in {
        _same_name(role) for role in rule.allowed_roles
    }:
        return ROLE_NOT_ALLOWED.format(
            category=category, allowed=list(rule.allowed_roles), actual=author.role
        )
    if rule.allowed_departments and _same_name(author.department) not in {
        _same_name(department) for department in rule.allowed_departments
    }:
        return DEPARTMENT_NOT_ALLOWED.format(
            category=category, allowed=list(rule.allowed_departments), actual=author.department
        )
    if rule.min_autonomy is not None and (
        author.autonomy_level is None
        or AUTONOMY_ORDER.index(author.autonomy_level) < AUTONOMY_ORDER.index(rule.min_autonomy)
    ):
        return AUTONOMY_TOO_LOW.format(
            category=category, required=rule.min_autonomy, actual=author.autonomy_level
        )
    return ""


def check_write_access(
    config: WriteAccessConfig, category: OrgFactCategory, author: OrgFactAuthor
) -> bool:
    """``True`` iff ``author`` may write facts of ``category``."""
    return explain_write_access(config, category, author).allowed


class OrgMemoryAccessDeniedError(AccessDeniedError):
    code = "org_write_denied"


def require_human_author_for_core_policy(category: OrgFactCategory, author: OrgFactAuthor) -> None:
    """Raise ``core_policy_human_only`` when a non-human would become a core policy's author.

    The rule table already denies agents; this holds for every path that publishes on an
    agent's behalf (an approved write request), whatever the company's rules say.
    """
    if OrgFactCategory(category) == OrgFactCategory.CORE_POLICY and not author.is_human:
        raise OrgMemoryAccessDeniedError(
            CORE_POLICY_HUMAN_AUTHORED,
            code="core_policy_human_only",
            extra={"category": str(OrgFactCategory.CORE_POLICY), "can_request": False},
        )


def require_write_access(
    config: WriteAccessConfig, category: OrgFactCategory, author: OrgFactAuthor
) -> WriteAccessDecision:
    """Return the (allowing) decision, or raise :class:`OrgMemoryAccessDeniedError`.

    The error's ``extra`` carries ``category``, ``rule``, ``reason`` and ``can_request``.
    """
    decision = explain_write_access(config, category, author)
    if not decision.allowed:
        raise OrgMemoryAccessDeniedError(
            WRITE_DENIED.format(reason=decision.reason),
            extra=decision.problem_extra(author_is_human=author.is_human),
        )
    return decision
