"""Two humans decide one item at the same moment: exactly one decision, one audit entry.
Real threads, each on its own connection and transaction."""

import threading

import pytest
from django.db import connection

from orgmemory.models import ApprovalItem
from orgmemory.services.approvals import approval_decide, approval_request
from persistence.models import AuditEntry
from persistence.principal import Principal
from synthorg.errors import ConflictError
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 5


def _race(company, deciders, item_id):
    barrier = threading.Barrier(len(deciders))
    outcomes: list = []

    def decide(principal, decision):
        try:
            barrier.wait()
            approval_decide(
                company=company,
                actor=principal,
                item_id=item_id,
                decision=decision,
                reason="not now" if decision == "reject" else "",
            )
            outcomes.append(decision)
        except ConflictError as exc:
            outcomes.append(exc.code)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=decide, args=(principal, decision))
        for principal, decision in deciders
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_concurrent_deciders_first_writer_wins(company, allow_flush_of_append_only_tables):
    alice = MembershipFactory(company=company, role="operator", user__password=None)
    bob = MembershipFactory(company=company, role="admin", user__password=None)
    deciders = [
        (Principal.for_human(alice.user, company, "operator"), "approve"),
        (Principal.for_human(bob.user, company, "admin"), "reject"),
    ]
    for _ in range(ROUNDS):
        item = approval_request(
            company=company,
            action_type="deploy:production",
            title="Deploy",
            risk_level="high",
            source="api",
            requested_by="release-bot",
        )
        outcomes = _race(company, deciders, item.pk)
        assert sorted(outcomes).count("approval_already_decided") == 1
        winner = next(o for o in outcomes if o in ("approve", "reject"))
        item.refresh_from_db()
        expected_user = alice.user.pk if winner == "approve" else bob.user.pk
        assert item.status == ("approved" if winner == "approve" else "rejected")
        assert item.decided_by_id == expected_user
        decisions = AuditEntry.objects.filter(
            target_id=str(item.pk), action_type__in=["approval.approved", "approval.rejected"]
        )
        assert list(decisions.values_list("actor_user_id", flat=True)) == [expected_user]
    assert ApprovalItem.objects.filter(status="pending").count() == 0
