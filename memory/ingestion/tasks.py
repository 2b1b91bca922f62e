"""django-q2 tasks of conversation ingestion: thin interfaces that load by id and call one
service."""

from __future__ import annotations

from memory.ingestion.models import Conversation, DreamRequest
from memory.ingestion.services.context import conversation_summary_refresh
from memory.ingestion.services.dream_requests import dream_request_run
from memory.ingestion.services.dream_schedule import dream_outcome, dream_scheduled
from memory.ingestion.services.extraction import conversation_extract
from persistence.models import Company


def extract_conversation(conversation_pk: int) -> str | None:
    """The debounced extraction of one conversation (armed by every flush), then the
    running-summary refresh of its context tier."""

    loaded = Conversation.objects.select_related("agent", "company")
    conversation = loaded.filter(pk=conversation_pk).first()
    if conversation is None:  # purged since it was armed
        return None
    run = conversation_extract(conversation=conversation)
    conversation = loaded.filter(pk=conversation_pk).first()
    if conversation is not None:
        conversation_summary_refresh(conversation=conversation)
    return run.status if run is not None else None


def dream_company(company_id: int) -> int | str | None:
    """The company's scheduled deep dream of every persistent agent (a durable job): the
    runs recorded, ``"deferred"`` when its LLM slots were busy (it waits for its turn),
    ``None`` when another worker runs the company's open dream."""

    company = Company.objects.filter(pk=company_id).first()
    if company is None:
        return 0
    return dream_outcome(dream_scheduled(company=company))


def dream_requested(request_id: str) -> str | None:
    """An agent's dream request (``memory.ingestion.services.dream_requests``): the run's
    status, or ``None`` when it was not claimable (it ran, another worker has it) or the
    company's LLM slots were busy (deferred: it runs at its turn)."""

    request = DreamRequest.objects.filter(pk=request_id).first()
    if request is None:  # erased since
        return None
    run = dream_request_run(request=request)
    return run.status if run is not None else None
