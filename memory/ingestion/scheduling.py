"""Arming the debounced extraction of a conversation through django-q2.

Each conversation with unextracted messages has at most one q2 ``ONCE`` schedule, named
``ingestion-extract:<pk>``, whose ``next_run`` every flush pushes to the new due time: a
burst of flushes moves one schedule forward instead of queueing one task per flush. q2
deletes a fired ``ONCE`` schedule; the next flush creates a new one. When the pending
messages exceed ``max_pending_tokens`` the task is also queued at once (after the commit).
The ``jobs-ingestion.extraction`` schedule catches conversations whose schedule was lost
(and retries failed runs), so arming is an optimisation, never the only path.
"""

from __future__ import annotations

import logging

from django.db import transaction

from synthorg.schedules import LLM_CLUSTER

EXTRACT_TASK = "memory.ingestion.tasks.extract_conversation"

logger = logging.getLogger(__name__)


def schedule_name(conversation_pk: int) -> str:
    # Not under synthorg.schedules.SCHEDULE_PREFIX: sync_schedules must leave these alone.
    return f"ingestion-extract:{conversation_pk}"


def arm_extraction(conversation, *, urgent: bool) -> None:
    """(Re)arm ``conversation``'s extraction at its ``extraction_due_at`` (inside the flush
    transaction, so the schedule exists exactly when the messages do)."""
    from django_q.models import Schedule

    name = schedule_name(conversation.pk)
    # The common case, one UPDATE; the row is created once per burst. No race between two
    # creators: flushes of one conversation hold its row lock.
    pushed = Schedule.objects.filter(name=name).update(next_run=conversation.extraction_due_at)
    if not pushed:
        Schedule.objects.create(
            name=name,
            func=EXTRACT_TASK,
            kwargs=repr({"conversation_pk": conversation.pk}),
            schedule_type=Schedule.ONCE,
            repeats=-1,
            cluster=LLM_CLUSTER,
            next_run=conversation.extraction_due_at,
        )
    if urgent:
        pk = conversation.pk
        transaction.on_commit(lambda: _enqueue_now(pk))


def _enqueue_now(conversation_pk: int) -> None:
    try:
        from django_q.tasks import async_task

        async_task(EXTRACT_TASK, conversation_pk=conversation_pk, cluster=LLM_CLUSTER)
    except Exception:  # the schedule (or the sweep) still fires it
        logger.exception("queueing the extraction of conversation %s failed", conversation_pk)


DREAM_TASK = "memory.ingestion.tasks.dream_company"
