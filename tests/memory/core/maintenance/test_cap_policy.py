"""One cap policy for both caps (issue 33): maintenance's cap and extraction's bounded
growth hold an agent at ``max_memories_per_agent`` the same way — its memories (private and
the shared entries it published), lowest confidence first, then oldest; the live core never;
a shared entry leaves with a retraction on record. Before, maintenance archived the oldest
(retracting shared publications) and extraction the lowest-confidence private ones."""

import pytest

from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from memory.core.services.maintenance import run_maintenance
from memory.ingestion.services.growth import memories_trim_to_cap
from persistence.models import AuditEntry
from tests.memory.core.maintenance.conftest import configure, seed

pytestmark = pytest.mark.django_db


def _agent_at_the_cap(caller, now):
    """Five memories, cap 3: the oldest is confident, the shared one weak, a newer one
    weaker still; the live core memory is the oldest of all."""
    configure(caller.company, archival={"enabled": False}, max_memories_per_agent=3)
    core = seed(caller.agent, 1, now=now, age_days=300, category="semantic", tags=["core"])[0]
    oldest = seed(caller.agent, 1, now=now, age_days=200, confidence=0.9)[0]
    shared = seed(caller.agent, 1, now=now, age_days=100, confidence=0.4, is_shared=True)[0]
    weakest = seed(caller.agent, 1, now=now, age_days=10, confidence=0.2)[0]
    strong = seed(caller.agent, 1, now=now, age_days=5, confidence=0.95)[0]
    return core, oldest, shared, weakest, strong


@pytest.mark.parametrize("path", ["maintenance", "extraction"])
def test_both_caps_archive_the_same_memories(caller, now, path):
    core, oldest, shared, weakest, strong = _agent_at_the_cap(caller, now)

    if path == "maintenance":
        report = run_maintenance(agent=caller.agent, now=now)
        assert report.status == "succeeded", report.errors
    else:
        assert memories_trim_to_cap(agent=caller.agent, now=now) == 2

    kept = set(Memory.objects.filter(agent=caller.agent).values_list("pk", flat=True))
    assert kept == {core.pk, oldest.pk, strong.pk}
    assert dict(
        ArchivedMemory.objects.filter(agent=caller.agent).values_list("original_id", "mode")
    ) == {weakest.pk: "capped", shared.pk: "capped"}
    (retract,) = AuditEntry.objects.filter(action_type="memory.shared_retracted")
    assert (retract.target_id, retract.details["mode"]) == (str(shared.pk), "capped")
