"""Admin for conversation ingestion: read-only views of conversations, messages, extraction
runs with their facts, the daily journal (rendered as the day's Markdown) and the dream
diary. Everything here is written by the services (flush, extraction, dream), never by a
form; staff see only the companies they belong to."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html

from memory.ingestion.models import (
    Conversation,
    ConversationMessage,
    DreamRequest,
    DreamRun,
    ExtractedFact,
    ExtractionRun,
    JournalEntry,
)
from memory.ingestion.selectors import render_journal
from persistence.admin_scoping import ReadOnlyScopedAdmin


class _ReadOnly:
    actions = None

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class _ScopedReadOnlyAdmin(ReadOnlyScopedAdmin):
    """The shared company-scoped, view-only base (``persistence.admin_scoping``)."""


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@admin.register(Conversation)
class ConversationAdmin(_ScopedReadOnlyAdmin):
    list_display = (
        "external_id",
        "agent",
        "company",
        "level",
        "message_count",
        "extracted_through_seq",
        "verbatim_through_seq",
        "pending_tokens",
        "extraction_due_at",
        "updated_at",
    )
    list_filter = ("company", "level")
    list_select_related = ("agent", "company")
    search_fields = ("external_id", "agent__name", "session_id")
    date_hierarchy = "updated_at"


@admin.register(ConversationMessage)
class ConversationMessageAdmin(_ScopedReadOnlyAdmin):
    list_display = ("conversation", "seq", "role", "short_content", "agent", "received_at")
    list_filter = ("company", "role")
    list_select_related = ("conversation", "agent")
    search_fields = ("content", "conversation__external_id")
    ordering = ("-received_at", "-id")

    @admin.display(description="content")
    def short_content(self, message: ConversationMessage) -> str:
        return _short(message.content)


class ExtractedFactInline(_ReadOnly, admin.TabularInline):
    model = ExtractedFact
    extra = 0
    fields = (
        "position",
        "decision",
        "category",
        "confidence",
        "content",
        "memory_id",
        "superseded_ids",
        "ignored_supersedes",
        "message_ids",
    )
    readonly_fields = fields


@admin.register(ExtractionRun)
class ExtractionRunAdmin(_ScopedReadOnlyAdmin):
    list_display = (
        "created_at",
        "agent",
        "conversation",
        "status",
        "trigger",
        "first_seq",
        "last_seq",
        "added",
        "skipped",
        "superseded",
        "below_confidence",
        "ignored_supersedes",
        "model",
        "method",
    )
    list_filter = ("company", "status", "trigger", "method")
    list_select_related = ("agent", "conversation")
    date_hierarchy = "created_at"
    search_fields = ("id", "agent__name", "conversation__external_id")
    inlines = (ExtractedFactInline,)


@admin.register(JournalEntry)
class JournalEntryAdmin(_ScopedReadOnlyAdmin):
    list_display = ("day", "agent", "kind", "conversation_external_id", "created_at")
    list_filter = ("company", "kind", "day")
    list_select_related = ("agent",)
    date_hierarchy = "day"
    search_fields = ("markdown", "agent__name")
    readonly_fields = ("day_markdown",)
    fields = (
        "company",
        "agent",
        "day",
        "kind",
        "run",
        "conversation_external_id",
        "created_at",
        "markdown",
        "day_markdown",
    )

    class Media:
        css = {"all": ("ingestion/admin.css",)}

    @admin.display(description="the whole day (YYYY-MM-DD.md)")
    def day_markdown(self, entry: JournalEntry):
        texts = (
            JournalEntry.objects.filter(agent_id=entry.agent_id, day=entry.day)
            .order_by("created_at", "id")
            .values_list("markdown", flat=True)
        )
        text = render_journal(agent_name=entry.agent.name, day=entry.day, entries=list(texts))
        return format_html('<pre class="journal-day">{}</pre>', text)


@admin.register(DreamRun)
class DreamRunAdmin(_ScopedReadOnlyAdmin):
    list_display = (
        "created_at",
        "agent",
        "company",
        "status",
        "trigger",
        "journal_from",
        "journal_to",
        "journal_entries",
        "method",
        "short_diary",
    )
    list_filter = ("company", "status", "trigger", "method")
    list_select_related = ("agent", "company")
    date_hierarchy = "created_at"
    search_fields = ("diary", "agent__name")

    @admin.display(description="diary")
    def short_diary(self, run: DreamRun) -> str:
        return _short(run.diary)


@admin.register(DreamRequest)
class DreamRequestAdmin(_ScopedReadOnlyAdmin):
    """Agents' "dream now" requests (``POST /api/v1/dreams``, ``request_dream``): queued or
    ran, how often the company's LLM slots deferred them, and the run."""

    list_display = (
        "requested_at",
        "agent",
        "company",
        "status",
        "method",
        "via",
        "deferrals",
        "run",
    )
    list_filter = ("company", "status", "method", "via")
    list_select_related = ("agent", "company", "run")
    date_hierarchy = "requested_at"
    search_fields = ("agent__name",)
