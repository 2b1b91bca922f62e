"""Synthetic queries for the query-adapter fine-tune (seed 000 "Domain-Specific Embedding
Fine-Tuning"): the company's LLM writes, per memory, the search questions it answers.

Generated once per run, on the LLM cluster (:func:`memory.finetune.services.
fine_tune_synthesize`), before training; never during preflight. The call path is every
other LLM feature's: :func:`memory.core.llm.completion_provider_for` (one model resolution:
the deployment's ``SYNTHORG_LLM_MODEL``, else the first one the endpoint lists; costs
recorded for the company), strict JSON-schema structured output asked for and read by the one
tolerant parser (:func:`synthorg.llm.replies.reply_json`: fences, prose, reasoning blocks),
under one of the company's LLM slots, which the caller holds (the kernel's job kind
``finetune.synthesis``: with every slot taken the run waits for its turn, it does not train
without its synthetic queries). Memory texts are **redacted** (``memory.redaction``) before
they are sent.

Failures degrade, counted per memory in the run's ``figures["synthetic"]["skipped"]``: a
refused request (an unknown model, a bad key: ``llm_refused``) skips every remaining memory
at once — the same request would be refused again; an unavailable server (5xx, timeouts
after the client's retries: ``llm_unavailable``) skips its batch, and after
:data:`MAX_CONSECUTIVE_FAILURES` failed batches in a row every remaining one; an answer that
is not the asked-for JSON skips its batch (``invalid_answer``); the memories left when
:data:`TIME_BUDGET_S` is spent are skipped (``time_budget``). The run trains on the other
pairs either way.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from uuid import UUID

import numpy as np
from django.utils import timezone

from memory.core.llm import completion_provider_for
from memory.core.models import Memory
from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.llm import CompletionProvider, LLMError
from synthorg.llm.base import ChatMessage, LLMConfigurationError, LLMRequestError
from synthorg.llm.replies import ReplyFormatError, reply_json
from synthorg.llm.structured import complete_json, json_schema_format
from synthorg.redaction import redactor_for

logger = logging.getLogger(__name__)

#: Memories per LLM call: few enough for a small local model's context, many enough that a
#: run of 500 memories is 63 calls.
BATCH = 8
#: Characters of a memory's (redacted) text sent; the start of a long memory says what it is.
MEMORY_CHARS = 1500
QUESTION_MAX_CHARS = 500
MAX_TOKENS_PER_MEMORY = 120
#: Failed batches in a row (server unavailable, unreadable answers) before the rest is skipped.
MAX_CONSECUTIVE_FAILURES = 2
#: Seconds of LLM calls one generation may take: the LLM cluster's q2 timeout (600 s by
#: default) minus one call's ``TOTAL_TIMEOUT`` (120 s) and a margin; no batch starts after it.
TIME_BUDGET_S = 420.0

SYSTEM_PROMPT = """\
You write the search questions people would type to find a note in an AI agent's memory. \
For each numbered memory, write {n} different short questions that the memory answers, in \
the memory's language, the way someone who does not remember its wording would ask \
(do not copy its sentences). Never include secrets, credentials or personal contact data. \
Answer with JSON only: {{"memories": [{{"id": <the memory's number>, "questions": \
["...", ...]}}, ...]}}"""

SCHEMA = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "questions": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["id", "questions"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["memories"],
    "additionalProperties": False,
}


@dataclass
class SyntheticQueries:
    """What one generation produced: ``pairs`` (question, memory id) and its figures."""

    method: str  # "llm", or "none" (no LLM configured, or nothing asked)
    pairs: list[tuple[str, UUID]] = field(default_factory=list)
    memories: int = 0  # memories sampled
    answered: int = 0  # memories with at least one question
    calls: int = 0
    model: str = ""
    skipped: dict[str, int] = field(default_factory=dict)
    redactions: dict[str, int] = field(default_factory=dict)

    def figures(self) -> dict:
        return {
            "method": self.method,
            "memories": self.memories,
            "answered": self.answered,
            "generated": len(self.pairs),
            "calls": self.calls,
            "model": self.model,
            "skipped": dict(self.skipped),
            "redactions": dict(self.redactions),
        }

    def skip(self, reason: str, count: int) -> None:
        if count:
            self.skipped[reason] = self.skipped.get(reason, 0) + count


def sample_memories(
    company: Company, embedder_id: str, *, limit: int, seed: int
) -> list[tuple[UUID, str]]:
    """Up to ``limit`` of the company's live memories with a vector of ``embedder_id``
    (the possible positives), a seeded sample in a stable order."""
    rows = list(
        Memory.objects.live(timezone.now())
        .filter(company=company, embedder_id=embedder_id, embedding__isnull=False)
        .order_by("id")
        .values_list("id", "content")
    )
    if len(rows) > limit:
        keep = np.random.default_rng([seed, 15485863]).choice(len(rows), limit, replace=False)
        rows = [rows[i] for i in sorted(keep)]
    return [(memory_id, content) for memory_id, content in rows if content.strip()]


def synthetic_messages(texts: list[str], per_memory: int) -> list[ChatMessage]:
    numbered = [{"id": i + 1, "memory": text} for i, text in enumerate(texts)]
    return [
        ChatMessage(role="system", content=SYSTEM_PROMPT.format(n=per_memory)),
        ChatMessage(role="user", content=json.dumps({"memories": numbered}, ensure_ascii=False)),
    ]


def read_answer(content: str | None, *, truncated: bool, count: int, per_memory: int):
    """``{position: [questions]}`` from the model's answer (positions 0-based; unknown ids,
    blank and repeated questions dropped; at most ``per_memory`` each). Raises
    :class:`ReplyFormatError` when it is not the asked-for object."""
    data = reply_json(content, truncated=truncated, expect=dict)
    entries = data.get("memories")
    if not isinstance(entries, list):
        raise ReplyFormatError('the answer has no "memories" list')
    found: dict[int, list[str]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("questions"), list):
            continue
        try:
            position = int(entry.get("id")) - 1
        except (TypeError, ValueError):
            continue
        if not 0 <= position < count:
            continue
        questions = found.setdefault(position, [])
        for question in entry["questions"]:
            text = str(question).strip()[:QUESTION_MAX_CHARS] if question is not None else ""
            if text and text not in questions and len(questions) < per_memory:
                questions.append(text)
    return found


def synthetic_queries_generate(
    *,
    company: Company,
    embedder_id: str,
    per_memory: int,
    max_memories: int,
    seed: int,
    provider: CompletionProvider | None = None,
    on_batch: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    budget: float = TIME_BUDGET_S,
) -> SyntheticQueries:
    """Ask the company's LLM for ``per_memory`` questions for each of up to ``max_memories``
    memories. Never raises for an LLM problem (see the module docstring). ``on_batch`` runs
    after each call (the run renews its lease)."""
    if per_memory == 0 or max_memories == 0:
        return SyntheticQueries(method="none")
    owned = provider is None
    provider = provider or completion_provider_for(company=company)
    if provider is None:
        return SyntheticQueries(method="none")
    try:
        return _generate(
            company, embedder_id, per_memory, max_memories, seed, provider, on_batch,
            clock=clock, budget=budget,
        )  # fmt: skip
    finally:
        close = getattr(provider, "close", None)
        if owned and close is not None:
            close()


def _generate(
    company, embedder_id, per_memory, max_memories, seed, provider, on_batch, *, clock, budget
):
    memories = sample_memories(company, embedder_id, limit=max_memories, seed=seed)
    result = SyntheticQueries(method="llm", memories=len(memories))
    redactor = redactor_for(company_config(company).memory.redaction)
    failures = 0
    started = clock()
    for start in range(0, len(memories), BATCH):
        batch = memories[start : start + BATCH]
        if failures >= MAX_CONSECUTIVE_FAILURES:
            result.skip(_last_failure(result), len(memories) - start)
            break
        if clock() - started >= budget:
            result.skip("time_budget", len(memories) - start)
            break
        texts = [redactor.redact_value(text[:MEMORY_CHARS], result.redactions) for _, text in batch]
        try:
            result.calls += 1
            completion = complete_json(
                provider,
                synthetic_messages(texts, per_memory),
                response_format=json_schema_format("synthetic_queries", SCHEMA),
                max_tokens=MAX_TOKENS_PER_MEMORY * per_memory * len(batch),
                temperature=0.7,
            )
            result.model = completion.model
            found = read_answer(
                completion.content,
                truncated=completion.finish_reason == "length",
                count=len(batch),
                per_memory=per_memory,
            )
        except (LLMRequestError, LLMConfigurationError) as exc:
            logger.warning("synthetic queries refused for company %s: %s", company.pk, exc)
            result.skip("llm_refused", len(memories) - start)
            break
        except LLMError as exc:
            logger.warning("synthetic queries unavailable for company %s: %s", company.pk, exc)
            result.skip("llm_unavailable", len(batch))
            failures += 1
            continue
        except ReplyFormatError as exc:
            logger.warning("synthetic queries unreadable for company %s: %s", company.pk, exc)
            result.skip("invalid_answer", len(batch))
            failures += 1
            continue
        finally:
            if on_batch is not None:
                on_batch()
        failures = 0
        for position, (memory_id, _) in enumerate(batch):
            questions = found.get(position, [])
            if not questions:
                result.skip("no_questions", 1)
                continue
            result.answered += 1
            result.pairs += [(question, memory_id) for question in questions]
    return result


def _last_failure(result: SyntheticQueries) -> str:
    """The reason the remaining memories are skipped after repeated failed batches."""
    for reason in ("llm_unavailable", "invalid_answer"):
        if reason in result.skipped:
            return reason
    return "llm_unavailable"
