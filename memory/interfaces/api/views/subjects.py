"""End users (*subjects*): one person's memories across the company's agents, and the
erasure of everything the company holds about them (``synthorg.subjects``).

* ``GET /subjects/{subject}/memories`` — human operators, admins and owners read every
  agent's memories about the subject; an agent key reads its own only
  (:func:`persistence.access.subject_read_scope`). Viewers are refused.
* ``POST /subjects/{subject}/erase`` — humans with role admin or owner erase across every agent;
  an agent key erases what that agent holds. One audited transaction
  (:func:`persistence.services.erasure.subject_erase`, the service the console and
  ``manage.py erase_subject`` call too), answering the receipt.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.core.models.memory import Memory
from memory.core.selectors.memories import subject_memories
from memory.interfaces.api import serializers as s
from memory.procedural.selectors import attach_lessons
from persistence.access import subject_read_scope
from persistence.api.permissions import IsPrincipal
from persistence.services.erasure import REASON_MAX_CHARS, subject_erase
from synthorg.api.schema import PROBLEM
from synthorg.api.serializers import Serializer
from synthorg.subjects import require_subject

SUBJECT_PARAMETER = OpenApiParameter(
    "subject",
    str,
    location=OpenApiParameter.PATH,
    description=(
        "The end user's id as your application stores it on memories, conversations and "
        "execution reports: 1–128 characters, no control characters, no `/`, no "
        "surrounding whitespace (percent-encode anything else, e.g. `@` in an e-mail)."
    ),
)


class SubjectEraseSerializer(Serializer):
    reason = serializers.CharField(
        max_length=REASON_MAX_CHARS,
        allow_blank=True,
        default="",
        help_text="Recorded in the audit entry (e.g. the ticket of the person's request).",
    )


class SubjectErasureReceiptSerializer(Serializer):
    subject = serializers.CharField()
    scope = serializers.ChoiceField(
        choices=["company", "agent"],
        help_text=(
            "`company`: every agent's rows were erased (an admin); `agent`: the calling "
            "agent's own (an agent key)."
        ),
    )
    agent_id = serializers.IntegerField(
        allow_null=True, help_text="The agent whose rows were erased (scope `agent`)."
    )
    counts = serializers.DictField(
        child=serializers.IntegerField(),
        help_text=(
            "Rows deleted per kind (`memories`, `memory chunks`, `memory revisions`, "
            "`shared knowledge`, `archived memories`, `conversations`, `conversation "
            "messages`, `extraction runs`, `extracted facts`, `request log entries`, "
            "`execution report subjects`, `compressed experiences`, …); kinds with nothing "
            "to delete are left out."
        ),
    )
    total = serializers.IntegerField(help_text="The sum of `counts`.")
    retained = serializers.ListField(
        child=serializers.CharField(),
        help_text=(
            "Kinds kept by design: append-only records (execution reports) that no longer "
            "name the subject once their link is deleted."
        ),
    )
    subject_digest = serializers.CharField(
        help_text=(
            "What the audit entry (`subject.erased`) records instead of the subject: a keyed "
            "digest, meaningless without the server's key."
        )
    )
    audit_entry_id = serializers.IntegerField()


def receipt_payload(receipt) -> dict:
    return {
        "subject": receipt.subject,
        "scope": receipt.scope,
        "agent_id": receipt.agent_id,
        "counts": receipt.counts,
        "total": receipt.total,
        "retained": list(receipt.retained),
        "subject_digest": receipt.subject_digest,
        "audit_entry_id": receipt.audit_entry_id,
    }


@extend_schema(tags=["subjects"])
class SubjectMemoriesView(generics.ListAPIView):
    permission_classes = [IsPrincipal]
    serializer_class = s.MemorySerializer
    queryset = Memory.objects.none()  # for the schema; requests use get_queryset()

    def get_queryset(self):
        principal = self.request.user
        subject = require_subject(self.kwargs["subject"])
        scope = subject_read_scope(principal)
        return subject_memories(company=principal.company, subject=subject, agent=scope)

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        attach_lessons(page or [])
        return page

    @extend_schema(
        summary="One end user's memories across the company's agents",
        description=(
            "Every unexpired memory about the subject — each agent's private memories and the "
            "company's shared knowledge — newest first, paginated (`agent_id` says whose). "
            "Human operators, admins and owners see every agent's; an agent key sees only its "
            "own; viewers get 403 `role_insufficient`. Nothing of another company is ever "
            "listed; an unknown subject is an empty list."
        ),
        parameters=[SUBJECT_PARAMETER],
        responses={200: s.MemorySerializer(many=True), 400: PROBLEM, 403: PROBLEM},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


@extend_schema(tags=["subjects"])
class SubjectEraseView(APIView):
    permission_classes = [IsPrincipal]

    @extend_schema(
        summary="Erase one end user across every agent of the company",
        description=(
            "Deletes everything the company holds about the subject, whichever agent holds "
            "it: memories with their chunks and revisions, shared knowledge, archived "
            "memories, conversations with their messages, extraction runs and proposed "
            "facts, request-log rows that searched by the subject, and the subject links of "
            "execution reports (the append-only reports stay, attributable to nobody). One "
            "transaction with one audit entry (`subject.erased`: counts and a keyed digest, "
            "never the subject or content). Humans with role admin or owner erase across every "
            "agent of the company (`scope: company`); an agent key erases what that agent "
            "holds (`scope: agent`), never another agent's; operators and viewers get 403. "
            "Answers the receipt; repeating it deletes nothing more (zero counts). Like "
            "`POST /agents/{id}/erase`, the body (`reason`, for the audit entry) may be empty."
        ),
        parameters=[SUBJECT_PARAMETER],
        request=SubjectEraseSerializer,
        responses={200: SubjectErasureReceiptSerializer, 400: PROBLEM, 403: PROBLEM},
        examples=[
            OpenApiExample(
                "Receipt",
                value={
                    "subject": "user-42",
                    "scope": "company",
                    "agent_id": None,
                    "counts": {
                        "memories": 12,
                        "memory chunks": 1,
                        "conversations": 2,
                        "conversation messages": 31,
                        "extraction runs": 3,
                    },
                    "total": 49,
                    "retained": ["execution reports"],
                    "subject_digest": "5f0c…",
                    "audit_entry_id": 981,
                },
                response_only=True,
            )
        ],
    )
    def post(self, request, subject: str):
        subject = require_subject(subject)
        body = SubjectEraseSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        receipt = subject_erase(
            company=request.user.company,
            subject=subject,
            principal=request.user,
            reason=body.validated_data["reason"],
            via="api",
        )
        return Response(SubjectErasureReceiptSerializer(receipt_payload(receipt)).data)
