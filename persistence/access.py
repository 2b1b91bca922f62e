"""Who may write what: the one explicit table of write permissions for operational data.

Reads are company-wide for every member (except the audit trail, which an agent sees only
for its own actions). Writes differ by kind of principal:

* **Agents** write only records that are theirs: the ``owner`` column of the table below must
  be the calling agent (a create that names another agent is refused; an update or delete of
  another agent's record is refused). ``ANY`` means any agent of the company may do it.
* **Humans** need a membership role at least as high as the one listed
  (``viewer < operator < admin < owner``); viewers never write. A missing entry means
  "not through the API" (e.g. heartbeats come only from agents).

Objects of another company are never reachable at all: views look them up in the caller's
company and answer 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from synthorg.errors import AccessDeniedError

if TYPE_CHECKING:
    from persistence.principal import Principal

ANY = "*"

CREATE, UPDATE, DELETE = "create", "update", "delete"

# resource -> action -> owner column an agent must match (or ANY)
AGENT_WRITES: dict[str, dict[str, str]] = {
    "task": {CREATE: ANY, UPDATE: "assignee"},
    "cost_record": {CREATE: "agent"},
    "message": {CREATE: "sender_agent"},
    "heartbeat": {CREATE: "agent"},
    "lifecycle_event": {CREATE: "agent"},
    "runtime_state": {CREATE: "agent", UPDATE: "agent"},
    "checkpoint": {CREATE: "agent", DELETE: "agent"},
    "parked_context": {CREATE: "agent", UPDATE: "agent", DELETE: "agent"},
    "task_metric": {CREATE: "agent"},
    "collaboration_metric": {CREATE: "agent"},
    "artifact": {CREATE: "created_by", UPDATE: "created_by", DELETE: "created_by"},
    "audit_entry": {CREATE: "actor_agent"},
    # an agent erases what it holds about one end user (persistence.services.erasure)
    "subject_content": {DELETE: "agent"},
}

ROLE_RANK = {"viewer": 0, "operator": 1, "admin": 2, "owner": 3}
OPERATOR, ADMIN, OWNER = "operator", "admin", "owner"

# resource -> action -> minimum membership role
HUMAN_WRITES: dict[str, dict[str, str]] = {
    "task": {CREATE: OPERATOR, UPDATE: OPERATOR, DELETE: ADMIN},
    "cost_record": {CREATE: ADMIN},  # manual corrections
    "message": {CREATE: OPERATOR},
    "lifecycle_event": {CREATE: OPERATOR},
    "runtime_state": {CREATE: OPERATOR, UPDATE: OPERATOR},  # e.g. pause an agent
    "checkpoint": {DELETE: ADMIN},
    "parked_context": {UPDATE: OPERATOR, DELETE: ADMIN},
    "artifact": {CREATE: OPERATOR, UPDATE: OPERATOR, DELETE: ADMIN},
    "audit_entry": {CREATE: OPERATOR},
    "project": {CREATE: OPERATOR, UPDATE: OPERATOR, DELETE: ADMIN},
    "setting": {CREATE: ADMIN, UPDATE: ADMIN, DELETE: ADMIN},
    "personality_preset": {CREATE: OPERATOR, UPDATE: OPERATOR, DELETE: ADMIN},
    # identity and governance (admin, console, commands)
    "agent": {CREATE: ADMIN, UPDATE: ADMIN},
    "agent_api_key": {CREATE: ADMIN, UPDATE: ADMIN},
    "company": {UPDATE: ADMIN},
    # core policies (org facts of category core_policy): pinned into every agent's prompt
    "core_policy": {CREATE: ADMIN, UPDATE: ADMIN, DELETE: ADMIN},
    # where approval notifications are POSTed: an outbound request the server makes
    "approval_webhook": {CREATE: ADMIN, UPDATE: ADMIN},
    "membership": {CREATE: ADMIN, UPDATE: ADMIN, DELETE: ADMIN},
    "agent_content": {DELETE: ADMIN},  # erasure of an agent's memories (right to be forgotten)
    # erasure of one end user's data across every agent of the company (synthorg.subjects)
    "subject_content": {DELETE: ADMIN},
    "export": {CREATE: ADMIN},  # data portability: export / import
    # the company's query-adapter fine-tune: start, resume/cancel/rollback, delete
    "fine_tune": {CREATE: ADMIN, UPDATE: ADMIN, DELETE: ADMIN},
}

AGENT_MAY_NOT = "Agents may not {action} {resource} records."
NOT_OWN_RECORD = "An agent may only {action} its own {resource} records."
HUMANS_MAY_NOT = "{resource} records cannot be {action}d by people through the API."
ROLE_TOO_LOW = (
    "Your role {role!r} may not {action} {resource} records (needs {needed!r} or higher)."
)
MEMBERSHIP_AT_OR_ABOVE = (
    "Your role {role!r} may only grant, change or remove memberships below it; {target!r} is "
    "not (owners manage admins and owners)."
)


@dataclass(frozen=True)
class WriteGrant:
    """Returned when a write is allowed; ``owner_rule`` tells the caller what it matched."""

    owner_rule: str | None


def _label(resource: str) -> str:
    return resource.replace("_", " ")


def require_write(
    principal: Principal, resource: str, action: str, *, owner_agent_id: int | None = None
) -> WriteGrant:
    """Raise :class:`AccessDeniedError` unless ``principal`` may ``action`` this record.

    ``owner_agent_id`` is the value of the record's owner column (for a create, the agent the
    new record would belong to).
    """
    label = _label(resource)
    if principal.is_agent:
        rule = AGENT_WRITES.get(resource, {}).get(action)
        if rule is None:
            raise AccessDeniedError(
                AGENT_MAY_NOT.format(action=action, resource=label), code="agent_write_forbidden"
            )
        if rule != ANY and owner_agent_id != principal.agent.pk:
            raise AccessDeniedError(
                NOT_OWN_RECORD.format(action=action, resource=label), code="not_own_record"
            )
        return WriteGrant(owner_rule=rule)
    needed = HUMAN_WRITES.get(resource, {}).get(action)
    if needed is None:
        raise AccessDeniedError(
            HUMANS_MAY_NOT.format(action=action, resource=label.capitalize()),
            code="human_write_forbidden",
        )
    if ROLE_RANK.get(principal.role, -1) < ROLE_RANK[needed]:
        raise AccessDeniedError(
            ROLE_TOO_LOW.format(role=principal.role, action=action, resource=label, needed=needed),
            code="role_insufficient",
        )
    return WriteGrant(owner_rule=None)


def require_membership_change(
    principal: Principal, *, action: str, current: str | None, new: str | None
) -> None:
    """Raise unless ``principal`` may take a membership from role ``current`` (``None``: no
    membership yet) to ``new`` (``None``: removed).

    Nobody grants, changes or removes a membership at or above their own role: an admin
    manages operators and viewers, never another admin or an owner, and never makes anyone
    (itself included) an admin or owner. Owners manage every role; so do superusers, who act
    as owners in every company. The one rule for admin, console, API and commands alike
    (:func:`persistence.services.companies.membership_set` / ``membership_remove`` call it).
    """
    require_write(principal, "membership", action)
    if principal.role == OWNER or getattr(principal.user, "is_superuser", False):
        return
    own = ROLE_RANK.get(principal.role, -1)
    for role in (current, new):
        if role is not None and ROLE_RANK.get(role, len(ROLE_RANK)) >= own:
            raise AccessDeniedError(
                MEMBERSHIP_AT_OR_ABOVE.format(role=principal.role, target=role),
                code="membership_role_too_high",
            )


def owner_for_create(principal: Principal, resource: str, requested):
    """The agent a new record belongs to: an agent defaults to itself; then check the rule."""
    owner = requested
    if principal.is_agent and owner is None and AGENT_WRITES.get(resource, {}).get(CREATE) != ANY:
        owner = principal.agent
    require_write(principal, resource, CREATE, owner_agent_id=owner.pk if owner else None)
    return owner


#: the lowest membership role that may read one end user's memories across every agent of
#: the company (``GET /subjects/{subject}/memories``): operators, admins, owners
SUBJECT_READ_ROLE = OPERATOR
SUBJECT_READ_ROLE_TOO_LOW = (
    "Your role {role!r} may not read an end user's memories across the company's agents "
    "(needs 'operator' or higher)."
)


def subject_read_scope(principal: Principal):
    """Whose memories ``principal`` may read about one end user (:mod:`synthorg.subjects`):
    ``None`` for every agent of the company (a human operator, admin or owner), the agent
    itself for an agent key (its own memories only, private and published). A viewer is
    refused (``role_insufficient``): private memories are the agents', and a per-person read
    across them is a privileged one."""
    if principal.is_agent:
        return principal.agent
    if ROLE_RANK.get(principal.role, -1) < ROLE_RANK[SUBJECT_READ_ROLE]:
        raise AccessDeniedError(
            SUBJECT_READ_ROLE_TOO_LOW.format(role=principal.role), code="role_insufficient"
        )
    return None
