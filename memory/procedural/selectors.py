"""Reads of procedural learning, always scoped to the caller's company (and agent)."""

from __future__ import annotations

from django.db.models import QuerySet

from memory.core.models.memory import Memory
from memory.core.selectors.memories import agent_visible_q
from memory.procedural.models import CompressedExperience, ExecutionReport, ProceduralLesson
from persistence.principal import Principal
from synthorg.errors import NotFoundError

REPORT_NOT_FOUND = "No execution report with this id is visible to the caller."


def execution_reports_visible_to(principal: Principal) -> QuerySet[ExecutionReport]:
    """An agent sees its own reports; a human member sees every report of the company."""
    qs = ExecutionReport.objects.filter(company=principal.company).select_related(
        "capture", "subject_link"
    )
    if principal.is_agent:
        qs = qs.filter(agent=principal.agent)
    return qs


def execution_reports_in_window(
    *, company, since=None, until=None, outcomes=()
) -> QuerySet[ExecutionReport]:
    """Every agent's reports of ``company`` in ``[since, until)``, oldest first (what the
    skill evolver mines across agents)."""
    qs = ExecutionReport.objects.filter(company=company)
    if since is not None:
        qs = qs.filter(created_at__gte=since)
    if until is not None:
        qs = qs.filter(created_at__lt=until)
    if outcomes:
        qs = qs.filter(outcome__in=list(outcomes))
    return qs.order_by("created_at", "id")


def execution_report_get(*, principal: Principal, report_id) -> ExecutionReport:
    report = execution_reports_visible_to(principal).filter(pk=report_id).first()
    if report is None:
        raise NotFoundError(REPORT_NOT_FOUND, code="execution_report_not_found")
    return report


def recent_quality_scores(*, report: ExecutionReport, window: int) -> list[float]:
    """The agent's ``window`` most recent quality scores reported before ``report``."""
    return list(
        ExecutionReport.objects.filter(
            agent_id=report.agent_id,
            company_id=report.company_id,
            quality_score__isnull=False,
            created_at__lt=report.created_at,
        )
        .order_by("-created_at")
        .values_list("quality_score", flat=True)[:window]
    )


def attach_lessons(memories) -> None:
    """Load the lessons of the PROCEDURAL memories among ``memories`` in one query and cache
    them on the rows (``memory.lesson``; ``None`` cached for one without a lesson)."""

    procedural = [m for m in memories if m.category == "procedural"]
    if not procedural:
        return
    ids = [m.pk for m in procedural]
    lessons = {
        lesson.memory_id: lesson for lesson in ProceduralLesson.objects.filter(memory_id__in=ids)
    }
    replaced: dict = {}
    if lessons:
        for newer, older in (
            Memory.objects.filter(superseded_by_id__in=list(lessons))
            .order_by("superseded_at", "id")
            .values_list("superseded_by_id", "id")
        ):
            replaced.setdefault(newer, []).append(older)
    for memory in procedural:
        lesson = lessons.get(memory.pk)
        if lesson is not None:
            lesson.supersedes_ids = replaced.get(memory.pk, [])
        Memory.lesson.related.set_cached_value(memory, lesson)


def lesson_supersedes(lesson: ProceduralLesson) -> list:
    """Ids of the memories ``lesson``'s memory superseded (oldest supersession first); cached
    by :func:`attach_lessons`."""
    cached = getattr(lesson, "supersedes_ids", None)
    if cached is None:
        cached = list(
            Memory.objects.filter(superseded_by_id=lesson.memory_id)
            .order_by("superseded_at", "id")
            .values_list("id", flat=True)
        )
        lesson.supersedes_ids = cached
    return cached


def lesson_of(memory):
    """The lesson of ``memory`` if it is a PROCEDURAL memory that has one, else ``None``."""
    from django.core.exceptions import ObjectDoesNotExist

    if memory.category != "procedural":
        return None
    try:
        return memory.lesson
    except ObjectDoesNotExist:
        return None


LESSON_NOT_FOUND = "No procedural lesson with this id is visible to the caller."


def lesson_for(*, principal: Principal, memory_id):
    """The lesson of a memory the caller may read: an agent its own memories and the
    company's shared ones (while shared knowledge is on), a human member any memory of the
    company."""
    qs = ProceduralLesson.objects.filter(
        company=principal.company, memory__company=principal.company, memory_id=memory_id
    ).select_related("memory")
    if principal.is_agent:
        qs = qs.filter(agent_visible_q(principal.agent, prefix="memory__"))
    lesson = qs.first()
    if lesson is None:
        raise NotFoundError(LESSON_NOT_FOUND, code="lesson_not_found")
    return lesson


def lesson_training_pairs(company, embedder_id: str):
    """Fine-tune pairs (``memory.core.extensions.register_training_pair_source``): a live
    lesson's activation condition (the situation an agent is in when it needs the lesson)
    → the lesson's memory, whose discovery text is what retrieval embeds."""
    rows = (
        ProceduralLesson.objects.filter(
            company=company,
            memory__superseded_at__isnull=True,
            memory__embedder_id=embedder_id,
            memory__embedding__isnull=False,
        )
        .order_by("created_at", "memory_id")
        .values_list("condition", "memory_id")
    )
    for condition, memory_id in rows.iterator():
        if condition.strip():
            yield condition, memory_id


def compressed_experiences_visible_to(principal: Principal):
    """Compressed experiences (newest first): an agent's own, or all the company's for a
    human member."""
    rows = CompressedExperience.objects.filter(company=principal.company)
    if principal.is_agent:
        rows = rows.filter(agent=principal.agent)
    return rows
