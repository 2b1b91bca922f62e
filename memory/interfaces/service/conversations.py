"""Conversations (flush, extraction runs, context tier), the daily journal and deep dreams."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from uuid import UUID

from django.db.models import QuerySet

from memory.ingestion import selectors as ingestion_selectors
from memory.ingestion.domain import FlushResult, MessageIn
from memory.ingestion.models import Conversation, DreamRequest, DreamRun, ExtractionRun
from memory.ingestion.services.context import conversation_context
from memory.ingestion.services.dream_requests import dream_request
from memory.ingestion.services.messages import (
    conversation_delete,
    conversation_message_pop,
    conversation_messages_append,
)
from memory.interfaces.service.base import ServiceBase


class ConversationsMixin(ServiceBase):
    """Conversations, the journal and dreams (the ingestion services raise domain errors)."""

    def conversation_append(
        self,
        conversation_id: str,
        messages: Sequence[MessageIn],
        *,
        session_id: str | None = None,
        project_id: int | None = None,
        subject: str | None = None,
        extract_now: bool = False,
    ) -> FlushResult:
        """Flush messages of a conversation (stored now; extraction runs later, or is queued
        at once with ``extract_now``)."""
        return conversation_messages_append(
            agent=self.agent,
            conversation_id=conversation_id,
            messages=messages,
            session_id=session_id,
            project_id=project_id,
            principal=self.principal,
            subject=subject,
            extract_now=extract_now,
        )

    def extraction_outcome(self, conversation_id: str, *, first_seq: int, last_seq: int):
        """Whether the extraction of messages ``first_seq..last_seq`` of the caller's
        conversation has finished, and the memories it formed (see
        :func:`memory.ingestion.selectors.extraction_outcome`)."""
        return ingestion_selectors.extraction_outcome(
            agent=self.agent,
            conversation_id=conversation_id,
            first_seq=first_seq,
            last_seq=last_seq,
        )

    def conversations(self) -> QuerySet[Conversation]:
        return ingestion_selectors.agent_conversations(agent=self.agent)

    def conversation(self, conversation_id: str) -> Conversation:
        return ingestion_selectors.conversation_get(
            agent=self.agent, conversation_id=conversation_id
        )

    def conversation_delete(self, conversation_id: str) -> int:
        """Delete a conversation (messages, summary, runs; its memories stay)."""
        return conversation_delete(
            agent=self.agent, conversation_id=conversation_id, principal=self.principal
        )

    def conversation_message_pop(self, conversation_id: str):
        """Remove the conversation's last message and return it."""
        return conversation_message_pop(
            agent=self.agent, conversation_id=conversation_id, principal=self.principal
        )

    def conversation_messages(self, conversation_id: str, **filters) -> QuerySet:
        """``filters``: ``query``, ``role``, ``after_seq``, ``before_seq``."""
        return ingestion_selectors.conversation_messages(
            agent=self.agent, conversation_id=conversation_id, **filters
        )

    def extraction_runs(self, conversation_id: str) -> QuerySet[ExtractionRun]:
        return ingestion_selectors.conversation_runs(
            agent=self.agent, conversation_id=conversation_id
        )

    def extraction_run(self, conversation_id: str, run_id) -> ExtractionRun:
        return ingestion_selectors.conversation_run_get(
            agent=self.agent, conversation_id=conversation_id, run_id=run_id
        )

    def conversation_context(self, conversation_id: str, *, token_budget: int):
        return conversation_context(
            agent=self.agent, conversation_id=conversation_id, token_budget=token_budget
        )

    def journal_days(self) -> list[tuple[date, int]]:
        return ingestion_selectors.journal_days(agent=self.agent)

    def journal_day(self, day: date) -> str | None:
        return ingestion_selectors.journal_markdown(agent=self.agent, day=day)

    def dream_runs(self) -> QuerySet[DreamRun]:
        return ingestion_selectors.agent_dream_runs(agent=self.agent)

    def dream_request(self) -> DreamRequest:
        """Ask for a deep dream now: rate-limited (429 with ``retry_after``), queued on the
        LLM cluster under the company's LLM slots; extractive when no LLM is configured."""
        return dream_request(agent=self.agent, via=self.via)

    def dream_request_get(self, request_id: UUID | str) -> DreamRequest:
        return ingestion_selectors.agent_dream_request_get(agent=self.agent, request_id=request_id)
