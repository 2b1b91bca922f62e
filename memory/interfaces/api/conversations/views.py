"""REST endpoints of conversation ingestion: flush and page messages, extraction runs, the
context tier, the daily journal and the dream diary. Thin: validate → service/selector →
serialize. Another agent's conversation, or another company's, answers 404."""

from __future__ import annotations

from datetime import date

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
)
from rest_framework import status
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.core.errors import MemoryInputError, MemoryNotFoundError
from memory.ingestion.services.messages import check_conversation_id
from memory.interfaces.api.conversations import serializers as s
from memory.interfaces.api.views.common import AgentView
from synthorg.api.schema import PROBLEM

NOT_FOUND = OpenApiResponse(description="problem+json: no such conversation of the caller")
JOURNAL_NOT_FOUND = "The calling agent has no journal entry on this day."
BAD_DAY = "The day must be a date in the form YYYY-MM-DD."

FLUSH_EXAMPLE = {
    "messages": [
        {"role": "user", "content": "Please deploy billing on Fridays at noon UTC from now on."},
        {"role": "assistant", "content": "Noted: billing deploys move to Friday 12:00 UTC."},
    ]
}
FLUSHED = {
    "conversation_id": "chat-42",
    "stored": True,
    "accepted": 2,
    "message_ids": [101, 102],
    "first_seq": 1,
    "last_seq": 2,
    "extraction_due_at": "2026-11-23T06:00:30Z",
}


class SeqPagination(CursorPagination):
    """Keyset pages through one conversation in ``seq`` order (oldest first)."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    ordering = ("seq",)


class RecentPagination(CursorPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    ordering = ("-created_at", "-id")


def _paginate(view, request, queryset, paginator, serializer_class):
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)


class UpdatedPagination(CursorPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    ordering = ("-updated_at", "-id")


@extend_schema(tags=["conversations"])
class ConversationListView(AgentView, APIView):
    @extend_schema(
        summary="The caller's conversations",
        operation_id="conversations_list",
        description=(
            "Most recently active first (keyset-paginated): message count, how far extraction "
            "and the running summary have got, and when the next extraction is due."
        ),
        parameters=[
            OpenApiParameter("subject", str, required=False, description="Only this end user's."),
            OpenApiParameter("cursor", str, required=False),
            OpenApiParameter("page_size", int, required=False),
        ],
        responses={200: s.cursor_page(s.ConversationSerializer, "ConversationPage"), 400: PROBLEM},
    )
    def get(self, request):
        query = s.ConversationListQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        conversations = self.service.conversations()
        if "subject" in query.validated_data:
            conversations = conversations.filter(subject=query.validated_data["subject"])
        return _paginate(
            self, request, conversations, UpdatedPagination(), s.ConversationSerializer
        )


@extend_schema(tags=["conversations"])
class ConversationMessagesView(AgentView, APIView):
    @extend_schema(
        summary="Flush messages of a conversation",
        description=(
            "Stores the batch (1–500 messages, in order) durably and answers **202** at once; "
            "memories are extracted later by a debounced background task (after "
            "`memory.extraction.debounce_seconds` of quiet, or at once when the unextracted "
            "messages exceed `max_pending_tokens`). The agent's `memory_level` binds the "
            "conversation like a memory: `none` stores nothing (200, `stored: false`), "
            "`session` needs `session_id`, `project` an open project's `project_id`. A "
            "conversation keeps its first binding (409 `conversation_binding_mismatch`)."
        ),
        request=s.FlushSerializer,
        responses={
            202: s.FlushResultSerializer,
            200: s.FlushResultSerializer,
            400: PROBLEM,
            404: PROBLEM,
            409: PROBLEM,
        },
        examples=[
            OpenApiExample("Two messages", value=FLUSH_EXAMPLE, request_only=True),
            OpenApiExample("Accepted", value=FLUSHED, response_only=True, status_codes=["202"]),
        ],
    )
    def post(self, request, conversation_id):
        check_conversation_id(conversation_id)
        serializer = s.FlushSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        messages = s.messages_in(data["messages"])
        result = self.service.conversation_append(
            conversation_id,
            messages,
            session_id=data.get("session_id"),
            project_id=data.get("project_id"),
            subject=data.get("subject"),
        )
        return Response(
            s.FlushResultSerializer(result.model_dump()).data,
            status=status.HTTP_202_ACCEPTED if result.stored else status.HTTP_200_OK,
        )

    @extend_schema(
        summary="Page through a conversation's messages",
        operation_id="conversation_messages_list",
        description=(
            "Oldest first, keyset-paginated (`page_size` ≤ 500, follow `next`). `q` is a "
            "full-text search (websearch syntax, english stemming); `role`, `after_seq`, "
            "`before_seq` (exclusive) narrow the range."
        ),
        parameters=[
            OpenApiParameter("q", str, required=False),
            OpenApiParameter("role", str, enum=[r for r, _ in s.ROLE_CHOICES], required=False),
            OpenApiParameter("after_seq", int, required=False),
            OpenApiParameter("before_seq", int, required=False),
            OpenApiParameter("cursor", str, required=False),
            OpenApiParameter("page_size", int, required=False),
        ],
        responses={
            200: s.cursor_page(s.ConversationMessageSerializer, "ConversationMessagePage"),
            400: PROBLEM,
            404: NOT_FOUND,
        },
    )
    def get(self, request, conversation_id):
        query = s.MessageListQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        data = query.validated_data
        messages = self.service.conversation_messages(
            conversation_id,
            query=data.get("q"),
            role=data.get("role"),
            after_seq=data.get("after_seq"),
            before_seq=data.get("before_seq"),
        )
        return _paginate(self, request, messages, SeqPagination(), s.ConversationMessageSerializer)


@extend_schema(tags=["conversations"])
class ConversationDetailView(AgentView, APIView):
    @extend_schema(
        summary="One of the caller's conversations",
        operation_id="conversation_get",
        description=(
            "Its message count (the last `seq`), how far extraction and the running summary "
            "have got, and when the next extraction is due."
        ),
        responses={200: s.ConversationSerializer, 404: NOT_FOUND},
    )
    def get(self, request, conversation_id):
        return Response(s.ConversationSerializer(self.service.conversation(conversation_id)).data)

    @extend_schema(
        summary="Delete a conversation",
        operation_id="conversation_delete",
        description=(
            "Deletes the caller's conversation: its messages, running summary and extraction "
            "runs (**204**). The memories they formed stay (delete those with `DELETE "
            "/memories/{id}`). The id may be flushed to again; it starts a new conversation "
            "at `seq` 1. Audited (`conversation.deleted`, the number of messages, no "
            "content). 409 `conversation_extraction_running` while an extraction run is "
            "reading its messages."
        ),
        request=None,
        responses={204: None, 400: PROBLEM, 404: NOT_FOUND, 409: PROBLEM},
    )
    def delete(self, request, conversation_id):
        self.service.conversation_delete(conversation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(tags=["conversations"])
class ConversationLastMessageView(AgentView, APIView):
    @extend_schema(
        summary="Remove a conversation's last message",
        operation_id="conversation_message_pop",
        description=(
            "Removes the newest message (highest `seq`) of the caller's conversation and "
            "answers it. The next flush reuses its `seq`; extraction, the verbatim turns and "
            "the running summary are held at the new last message, so what is flushed in its "
            "place is extracted. Memories already formed from the removed message stay. 404 "
            "`conversation_empty` when no message is left; 409 "
            "`conversation_extraction_running` while an extraction run is reading the "
            "messages."
        ),
        request=None,
        responses={
            200: s.ConversationMessageSerializer,
            400: PROBLEM,
            404: NOT_FOUND,
            409: PROBLEM,
        },
    )
    def delete(self, request, conversation_id):
        message = self.service.conversation_message_pop(conversation_id)
        return Response(s.ConversationMessageSerializer(message).data)


@extend_schema(tags=["conversations"])
class ExtractionRunListView(AgentView, APIView):
    @extend_schema(
        summary="Extraction runs of a conversation",
        operation_id="conversation_extractions_list",
        description=(
            "Newest first. Each run covers the message range `first_seq`..`last_seq` and "
            "counts facts `added`, `skipped` (near duplicates), `superseded` (older memories "
            "marked superseded), `below_confidence` and `ignored_supersedes` (ids that are not "
            "the agent's own). `status`: `running`, `succeeded`, `skipped_no_llm` (runs recorded "
            "before the verbatim path), `failed` (a later run retries the same messages), "
            "`deferred` (the company's LLM slots were busy; nothing extracted, the next sweep "
            "runs it). "
            "`method`: `llm` (facts extracted) or `verbatim` (no LLM: the turns were stored)."
        ),
        parameters=[
            OpenApiParameter("cursor", str, required=False),
            OpenApiParameter("page_size", int, required=False),
        ],
        responses={
            200: s.cursor_page(s.ExtractionRunSerializer, "ExtractionRunPage"),
            400: PROBLEM,
            404: NOT_FOUND,
        },
    )
    def get(self, request, conversation_id):
        s.PageQuerySerializer(data=request.query_params.dict()).is_valid(raise_exception=True)
        runs = self.service.extraction_runs(conversation_id)
        return _paginate(self, request, runs, RecentPagination(), s.ExtractionRunSerializer)


@extend_schema(tags=["conversations"])
class ExtractionRunDetailView(AgentView, APIView):
    @extend_schema(
        summary="One extraction run with its facts and their provenance",
        description=(
            "Every fact the LLM proposed, the write gate's decision (`added`, `noop`, "
            "`below_confidence`), the memory it produced or duplicated, the memories it "
            "superseded and the ids of the messages of the batch it was extracted from."
        ),
        responses={200: s.ExtractionRunDetailSerializer, 404: PROBLEM},
    )
    def get(self, request, conversation_id, run_id):
        run = self.service.extraction_run(conversation_id, run_id)
        return Response(s.ExtractionRunDetailSerializer(run).data)


@extend_schema(tags=["conversations"])
class ConversationContextView(AgentView, APIView):
    @extend_schema(
        summary="The context tier: running summary + recent messages within a budget",
        description=(
            "Returns the conversation's running summary (at most half of `token_budget`) and "
            "the newest messages it does not cover that fit, in order, plus `chat`: the same "
            "as chat messages ready to send. Unsummarised messages that did not fit appear in "
            "the summary as one-line excerpts (`summary_truncated: true`); `omitted_messages` "
            "counts the unsummarised messages left out of the window. Tokens are estimated "
            "as characters / 4."
        ),
        request=s.ContextRequestSerializer,
        responses={200: s.ContextResultSerializer, 400: PROBLEM, 404: NOT_FOUND},
        examples=[OpenApiExample("Budget", value={"token_budget": 2000}, request_only=True)],
    )
    def post(self, request, conversation_id):
        serializer = s.ContextRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = self.service.conversation_context(
            conversation_id, token_budget=serializer.validated_data["token_budget"]
        )
        payload = {
            "conversation_id": result.conversation_id,
            "summary": result.summary,
            "summary_through_seq": result.summary_through_seq,
            "summary_truncated": result.summary_truncated,
            "messages": result.messages,
            "first_included_seq": result.first_included_seq,
            "omitted_messages": result.omitted_messages,
            "tokens_used": result.tokens_used,
            "token_budget": result.token_budget,
            "chat": result.chat,
        }
        return Response(s.ContextResultSerializer(payload).data)


def parse_day(raw: str) -> date:
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise MemoryInputError(
            BAD_DAY,
            code="invalid_day",
            errors=[{"field": "day", "message": BAD_DAY, "code": "invalid"}],
        ) from None


@extend_schema(tags=["journal"])
class JournalListView(AgentView, APIView):
    @extend_schema(
        summary="Days of the caller's journal",
        description="Newest first: each day with its number of entries and its Markdown URL.",
        responses={200: s.JournalDaySerializer(many=True)},
    )
    def get(self, request):
        days = self.service.journal_days()
        payload = [
            {"day": day, "entries": count, "url": f"/api/v1/journal/{day.isoformat()}"}
            for day, count in days
        ]
        return Response(s.JournalDaySerializer(payload, many=True).data)


@extend_schema(tags=["journal"])
class JournalDayView(AgentView, APIView):
    def perform_content_negotiation(self, request, force=False):
        # The body is Markdown whatever the client accepts (`Accept: text/markdown` must not
        # be a 406); errors are still problem+json.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        summary="The caller's journal of one day, as Markdown",
        description=(
            "The seed's `YYYY-MM-DD.md`: one entry per extraction run (and dream) of that UTC "
            "day, oldest first. `text/markdown`; 404 problem+json when the day has no entry."
        ),
        responses={
            (200, "text/markdown"): OpenApiTypes.STR,
            400: PROBLEM,
            404: PROBLEM,
        },
    )
    def get(self, request, day):
        markdown = self.service.journal_day(parse_day(day))
        if markdown is None:
            raise MemoryNotFoundError(JOURNAL_NOT_FOUND, code="journal_not_found")
        response = HttpResponse(markdown, content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = f'inline; filename="{day}.md"'
        return response


@extend_schema(tags=["journal"])
class DreamRunListView(AgentView, APIView):
    @extend_schema(
        summary="The caller's dream diary",
        operation_id="dreams_list",
        description=(
            "Deep-dream runs, newest first: status, the content hash of their inputs, the "
            "journal range read, the core summary memory written and what changed and why."
        ),
        parameters=[
            OpenApiParameter("cursor", str, required=False),
            OpenApiParameter("page_size", int, required=False),
        ],
        responses={200: s.cursor_page(s.DreamRunSerializer, "DreamRunPage"), 400: PROBLEM},
    )
    def get(self, request):
        s.PageQuerySerializer(data=request.query_params.dict()).is_valid(raise_exception=True)
        runs = self.service.dream_runs()
        return _paginate(self, request, runs, RecentPagination(), s.DreamRunSerializer)

    @extend_schema(
        summary="Ask for a deep dream now",
        operation_id="dreams_request",
        description=(
            "Queues a deep dream of the caller (its journal consolidated into its core summary "
            "memory) on the LLM workers, under the company's LLM slots; the outcome appears "
            "in `GET /dreams` (trigger `agent`) and `GET /dreams/requests/{id}`. With no LLM "
            "configured it runs the extractive dream (`method: extractive`). Rate-limited: "
            "one request per agent per `memory.dream.agent_request_interval_seconds` (429 "
            "`dream_rate_limited`) and `company_requests_per_hour` per company (429 "
            "`dream_company_rate_limited`), each with `Retry-After`. 422 `dream_disabled` "
            "when the company disabled dreams, `dream_not_persistent` unless the agent's "
            "memory level is `persistent`."
        ),
        request=None,
        responses={202: s.DreamRequestSerializer, 422: PROBLEM, 429: PROBLEM},
    )
    def post(self, request):
        dream = self.service.dream_request()
        return Response(s.DreamRequestSerializer(dream).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(tags=["journal"])
class DreamRequestDetailView(AgentView, APIView):
    @extend_schema(
        summary="One of the caller's dream requests",
        description="`queued` until its dream ran, then `ran` with the run.",
        responses={200: s.DreamRequestSerializer, 404: PROBLEM},
    )
    def get(self, request, request_id):
        return Response(s.DreamRequestSerializer(self.service.dream_request_get(request_id)).data)
