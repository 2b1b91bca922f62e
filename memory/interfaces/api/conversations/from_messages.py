"""``POST /memories/from-messages``: Mem0's ``add(messages, user_id=…)`` in one call.

Records the messages as a conversation (the same service as
``POST /conversations/{id}/messages``) with its extraction queued at once instead of after
the debounce, and answers 202 with where to poll. With ``wait: true`` the call waits up to
``timeout_seconds`` (at most :data:`MAX_WAIT_SECONDS`) for the background extraction and
answers 200 with the memories it formed — or 202 as without ``wait`` when it has not
finished by then (the extraction still completes; poll).
"""

from __future__ import annotations

import time
import uuid

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.core.errors import MemoryInputError
from memory.ingestion.services.messages import check_conversation_id
from memory.interfaces.api import serializers as s
from memory.interfaces.api.conversations.serializers import (
    ExtractionRunSerializer,
    FlushResultSerializer,
    FlushSerializer,
    messages_in,
)
from memory.interfaces.api.views.common import AgentView
from synthorg.api.schema import PROBLEM

MAX_WAIT_SECONDS = 30
DEFAULT_WAIT_SECONDS = 10
POLL_INTERVAL_SECONDS = 0.25
TIMEOUT_WITHOUT_WAIT = "timeout_seconds is only taken with wait: true."


class FromMessagesSerializer(FlushSerializer):
    conversation_id = serializers.CharField(
        required=False,
        help_text=(
            "Append to this conversation of the caller (created on first use); absent: a new "
            "conversation `msgs-<uuid>` for this call."
        ),
    )
    wait = serializers.BooleanField(
        default=False,
        help_text="Wait for the extraction (up to timeout_seconds) and answer its memories.",
    )
    timeout_seconds = serializers.IntegerField(
        min_value=1,
        max_value=MAX_WAIT_SECONDS,
        required=False,
        help_text=f"How long to wait (1–{MAX_WAIT_SECONDS}, default {DEFAULT_WAIT_SECONDS}).",
    )


class FromMessagesResultSerializer(FlushResultSerializer):
    extraction = serializers.ChoiceField(
        choices=["queued", "done", "disabled", "not_stored"],
        help_text=(
            "`queued`: runs in the background (poll `poll`); `done`: finished, `memories` "
            "holds what it formed; `disabled`: the company turned extraction off; "
            "`not_stored`: the agent's memory level is `none`."
        ),
    )
    poll = serializers.CharField(
        allow_null=True, help_text="The conversation's extraction runs (GET, newest first)."
    )
    runs = ExtractionRunSerializer(many=True, help_text="The runs over these messages so far.")
    memories = s.MemorySerializer(
        many=True, allow_null=True, help_text="With `extraction: done`: the memories formed."
    )


EXAMPLE = {
    "subject": "user-42",
    "messages": [
        {"role": "user", "content": "I moved to Lisbon last month."},
        {"role": "assistant", "content": "Noted: you live in Lisbon now."},
    ],
    "wait": True,
    "timeout_seconds": 10,
}


class MemoriesFromMessagesView(AgentView, APIView):
    @extend_schema(
        tags=["memories"],
        summary="Add memories from chat messages in one call",
        description=(
            "Records `messages` (1–500, `{role, content, name?, created_at?}`) as a "
            "conversation of the caller — `conversation_id`, or a new one per call — with the "
            "end user `subject` (see Subjects), and queues its extraction at once. Answers "
            "**202** with `extraction: queued` and `poll` (the conversation's extraction "
            "runs). With `wait: true` it waits up to `timeout_seconds` (1–30, default 10) and "
            "answers **200** with `extraction: done` and the `memories` formed, or 202 if the "
            "extraction has not finished by then (it still completes). The memory-level "
            "binding is a flush's: `session_id` / `project_id` as the level needs; level "
            "`none` stores nothing (200, `extraction: not_stored`)."
        ),
        request=FromMessagesSerializer,
        responses={
            202: FromMessagesResultSerializer,
            200: FromMessagesResultSerializer,
            400: PROBLEM,
            404: PROBLEM,
            409: PROBLEM,
        },
        examples=[OpenApiExample("With a subject, waiting", value=EXAMPLE, request_only=True)],
    )
    def post(self, request):
        body = FromMessagesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if "timeout_seconds" in data and not data["wait"]:
            raise MemoryInputError(
                TIMEOUT_WITHOUT_WAIT,
                code="validation_error",
                errors=[
                    {
                        "field": "timeout_seconds",
                        "message": TIMEOUT_WITHOUT_WAIT,
                        "code": "timeout_without_wait",
                    }
                ],
            )
        conversation_id = data.get("conversation_id") or f"msgs-{uuid.uuid4().hex}"
        check_conversation_id(conversation_id)
        messages = messages_in(data["messages"])
        flushed = self.service.conversation_append(
            conversation_id,
            messages,
            session_id=data.get("session_id"),
            project_id=data.get("project_id"),
            subject=data.get("subject"),
            extract_now=True,
        )
        payload = {
            **flushed.model_dump(),
            "extraction": "queued",
            "poll": f"/api/v1/conversations/{conversation_id}/extractions",
            "runs": [],
            "memories": None,
        }
        if not flushed.stored:
            payload.update(extraction="not_stored", poll=None)
            return Response(FromMessagesResultSerializer(payload).data, status=status.HTTP_200_OK)
        if flushed.extraction_due_at is None:  # the company turned extraction off
            payload.update(extraction="disabled", poll=None)
            return Response(
                FromMessagesResultSerializer(payload).data, status=status.HTTP_202_ACCEPTED
            )
        outcome = self._outcome(conversation_id, flushed)
        if data["wait"]:
            deadline = time.monotonic() + data.get("timeout_seconds", DEFAULT_WAIT_SECONDS)
            while not outcome.done and time.monotonic() < deadline:
                time.sleep(POLL_INTERVAL_SECONDS)
                outcome = self._outcome(conversation_id, flushed)
        payload["runs"] = outcome.runs
        if outcome.done:
            payload.update(extraction="done", memories=outcome.memories)
            return Response(FromMessagesResultSerializer(payload).data, status=status.HTTP_200_OK)
        return Response(FromMessagesResultSerializer(payload).data, status=status.HTTP_202_ACCEPTED)

    def _outcome(self, conversation_id, flushed):
        assert flushed.first_seq is not None and flushed.last_seq is not None  # stored
        return self.service.extraction_outcome(
            conversation_id, first_seq=flushed.first_seq, last_seq=flushed.last_seq
        )
