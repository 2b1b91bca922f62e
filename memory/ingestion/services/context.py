"""The context tier: a running summary plus the most recent messages, within a token budget.

:func:`conversation_context` (a read, at request time, no LLM): the stored running summary
(at most half the budget; its newest part kept when cut) is followed by the newest messages
not covered by it, newest first as long as they fit, returned in conversation order. The
messages between the summary and that window that did not fit are not dropped silently: as
many as fit are added to the summary section as one-line excerpts (the truncation fallback).

:func:`conversation_summary_refresh` (background, after an extraction): when the messages
not yet in the summary exceed ``memory.conversation.summary_threshold_tokens``, all but the
newest ``threshold/2`` tokens of them are folded into the summary — by the LLM
incrementally (previous summary + new messages), or, without an LLM or when it fails, by
truncation (the summary plus one-line excerpts, its oldest lines dropped to fit).

Token counts use the product's estimate (``len(text) // 4``, :mod:`memory.core.retrieval.packing`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.core.llm import completion_provider_for
from memory.core.retrieval.packing import estimate_tokens
from memory.ingestion.models import Conversation, ConversationMessage
from memory.ingestion.prompts import PromptMessage, summary_messages
from memory.ingestion.selectors import conversation_get
from persistence.models import Agent
from persistence.selectors.config import company_config
from synthorg.llm import CompletionProvider, LLMError
from synthorg.llm.replies import reply_text
from synthorg.llm.slots import company_llm_slot
from synthorg.text import clip

logger = logging.getLogger(__name__)

EXCERPT_CHARS = 160
SUMMARY_HEADING = "Summary of the earlier conversation:"
NO_LLM_SUMMARY = "no LLM configured: old messages folded as one-line excerpts"
EMPTY_SUMMARY = "the LLM answered no summary text: old messages folded as one-line excerpts"
REASON_MAX = 1000


def excerpt_line(message) -> str:
    return f"[{message.seq}] {message.role}: {clip(message.content, EXCERPT_CHARS)}"


def cut_to_tokens(text: str, tokens: int, *, keep_end: bool) -> str:
    """``text`` cut to about ``tokens`` tokens at a line or word boundary."""
    limit = max(0, tokens) * 4
    if len(text) <= limit:
        return text
    part = text[-limit:] if keep_end else text[:limit]
    if keep_end:
        cut = part.find("\n")
        return part[cut + 1 :] if 0 <= cut < len(part) // 2 else part
    cut = part.rfind(" ")
    return part[:cut] if cut > len(part) // 2 else part


@dataclass
class ContextResult:
    conversation_id: str
    summary: str
    summary_through_seq: int
    summary_truncated: bool
    messages: list = field(default_factory=list)
    omitted_messages: int = 0
    tokens_used: int = 0
    token_budget: int = 0

    @property
    def first_included_seq(self) -> int | None:
        return self.messages[0].seq if self.messages else None

    @property
    def chat(self) -> list[dict[str, str]]:
        out = []
        if self.summary:
            out.append({"role": "system", "content": f"{SUMMARY_HEADING}\n{self.summary}"})
        out.extend({"role": m.role, "content": m.content} for m in self.messages)
        return out


def conversation_context(*, agent: Agent, conversation_id: str, token_budget: int) -> ContextResult:
    conversation = conversation_get(agent=agent, conversation_id=conversation_id)
    summary = conversation.summary
    truncated = False
    if estimate_tokens(summary) > token_budget // 2:
        summary = cut_to_tokens(summary, token_budget // 2, keep_end=True)
        truncated = True
    used = estimate_tokens(summary)
    window: list[ConversationMessage] = []
    newer = (
        ConversationMessage.objects.filter(
            conversation=conversation, seq__gt=conversation.summary_through_seq
        )
        .select_related("conversation")
        .order_by("-seq")
    )
    omitted: list[ConversationMessage] = []
    for message in newer.iterator(chunk_size=200):
        if omitted or used + message.token_count > token_budget:
            omitted.append(message)
            if len(omitted) >= 200:  # enough excerpts to fill any summary section
                break
            continue
        window.append(message)
        used += message.token_count
    omitted_count = max(
        0, conversation.message_count - conversation.summary_through_seq - len(window)
    )
    if omitted:
        # Truncation fallback: the unsummarised messages that did not fit, as excerpts.
        lines: list[str] = []
        for message in omitted:  # newest first
            line = excerpt_line(message)
            cost = estimate_tokens(line + "\n")
            if used + cost > token_budget:
                break
            lines.append(line)
            used += cost
        if lines:
            summary = "\n".join([summary, *reversed(lines)]).strip("\n")
            truncated = True
    return ContextResult(
        conversation_id=conversation.external_id,
        summary=summary,
        summary_through_seq=conversation.summary_through_seq,
        summary_truncated=truncated,
        messages=list(reversed(window)),
        omitted_messages=omitted_count,
        tokens_used=used,
        token_budget=token_budget,
    )


def conversation_summary_refresh(
    *,
    conversation: Conversation,
    provider: CompletionProvider | None = None,
    now: datetime | None = None,
) -> bool:
    """Fold old unsummarised messages into the running summary; ``True`` if it changed."""
    now = now or timezone.now()
    config = company_config(conversation.company).memory.conversation
    newer = list(
        ConversationMessage.objects.filter(
            conversation=conversation, seq__gt=conversation.summary_through_seq
        ).order_by("seq")
    )
    if sum(m.token_count for m in newer) <= config.summary_threshold_tokens:
        return False
    keep, tail = config.summary_threshold_tokens // 2, 0
    cut = len(newer)
    while cut > 0 and tail + newer[cut - 1].token_count <= keep:
        cut -= 1
        tail += newer[cut].token_count
    folded = newer[:cut]
    if not folded:
        return False
    if provider is None:
        provider = completion_provider_for(company=conversation.company, agent=conversation.agent)
    summary, error = None, NO_LLM_SUMMARY
    if provider is not None:
        with company_llm_slot(conversation.company_id) as slot:
            if not slot:
                # Every LLM slot of the company is taken (synthorg.llm.slots): the summary
                # stays as it is and the next refresh folds these messages.
                logger.info("summary of conversation %s deferred: LLM slots busy", conversation.pk)
                return False
            try:
                completion = provider.complete(
                    summary_messages(
                        summary=conversation.summary,
                        messages=[PromptMessage(m.seq, m.role, m.name, m.content) for m in folded],
                        max_tokens=config.max_summary_tokens,
                    ),
                    max_tokens=config.max_summary_tokens * 2,
                    temperature=0.2,
                )
                summary = reply_text(completion.content) or None
                if summary is None:
                    error = EMPTY_SUMMARY
            except LLMError as exc:
                logger.warning(
                    "summary of conversation %s: LLM failed (%s); truncating", conversation.pk, exc
                )
                error = f"{type(exc).__name__}: {exc}"[:REASON_MAX]
    method = "llm" if summary is not None else "truncation"
    if summary is not None:
        error = ""
    else:
        lines = [conversation.summary] if conversation.summary else []
        lines += [excerpt_line(m) for m in folded]
        summary = "\n".join(lines)
    summary = cut_to_tokens(summary, config.max_summary_tokens, keep_end=True)
    through = folded[-1].seq
    with transaction.atomic():
        updated = Conversation.objects.filter(
            pk=conversation.pk, summary_through_seq=conversation.summary_through_seq
        ).update(
            summary=summary,
            summary_through_seq=through,
            summary_updated_at=now,
            summary_method=method,
            summary_error=error,
        )
    if updated:
        conversation.summary, conversation.summary_through_seq = summary, through
        conversation.summary_updated_at = now
        conversation.summary_method, conversation.summary_error = method, error
    return bool(updated)
