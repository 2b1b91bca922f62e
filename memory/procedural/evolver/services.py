"""One evolver cycle for one company: reports → patterns → drafts → supersession → items.

The cycle only ever *emits ApprovalItems* (``skill_evolver:org_promotion``, risk medium; a
CONFLICT becomes ``skill_evolver:conflict``, risk high, carrying both texts). It reads org
memory to judge supersession and never writes it: publishing happens when a human approves
(:mod:`memory.procedural.evolver.apply`). Each cycle stores an :class:`EvolverReport` and logs
the seed's events (``SKILL_EVOLVER_CYCLE_START`` … ``SKILL_EVOLVER_CYCLE_COMPLETE``).

A pattern already proposed is not proposed again while its item is pending, nor after a
decision or expiry unless its evidence grew (more reports than the last item carried). The
check is repeated under a per-pattern lock right before an item is emitted, so a cycle and
the draft retry schedule never emit the same pattern twice.

A draft that fails (LLM error, unusable answer) is recorded as a
:class:`~memory.procedural.evolver.models.DraftFailure`; cycles leave such a pattern to the
retry schedule (:mod:`memory.procedural.evolver.draft_retry`) while it is open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from memory.core.llm import completion_provider_for
from memory.procedural.contradictions import advising_entries, contradicted_by
from memory.procedural.domain import ProposalError
from memory.procedural.evolver import drafting, skill_text
from memory.procedural.evolver.draft_failures import draft_failure_open, failure_reason
from memory.procedural.evolver.models import (
    OPEN_DRAFT_STATUSES,
    DraftFailure,
    EvolverReport,
)
from memory.procedural.evolver.patterns import (
    Pattern,
    Trajectory,
    eligible_patterns,
    group_trajectories,
)
from memory.procedural.evolver.rule_drafting import SkillAdvice, rule_draft, skill_advice
from memory.procedural.evolver.supersession import Skill, Verdict, judge
from memory.procedural.models import ExecutionReport, OrgSkill
from memory.procedural.rule_lessons import advice_title
from memory.procedural.skills import org_skills
from orgmemory.models import ApprovalItem, OrgFact
from orgmemory.services.approvals import approval_request
from persistence.models import Agent, Company
from persistence.selectors.config import company_config
from synthorg.llm import LLMError
from synthorg.llm.slots import company_llm_slot
from synthorg.text import clip

logger = logging.getLogger("memory.procedural.evolver")

ACTION_PROMOTION = "skill_evolver:org_promotion"
ACTION_CONFLICT = "skill_evolver:conflict"
SOURCE = "skill_evolver"
PROCEDURE = "procedure"

Progress = Callable[[str], None]


@dataclass
class CyclePlan:
    """What a cycle found (returned by dry runs, recorded by real ones)."""

    reports_scanned: int = 0
    patterns: list[Pattern] = field(default_factory=list)
    eligible: list[Pattern] = field(default_factory=list)
    already_proposed: list[str] = field(default_factory=list)
    awaiting_retry: list[str] = field(default_factory=list)  # an open DraftFailure holds them
    details: dict[str, dict] = field(default_factory=dict)  # report id -> its fields


#: what a draft's facts are computed from (every field a skill's evidence states)
REPORT_FIELDS = (
    "id",
    "agent_id",
    "created_at",
    "outcome",
    "task_type",
    "task_title",
    "error_category",
    "error_message",
    "tool_calls",
    "retry_count",
    "recovery",
)


def pattern_records(pattern: Pattern, details: dict[str, dict]) -> list[dict]:
    """The pattern's member reports' fields, in the pattern's order."""
    return [details[i] for i in pattern.report_ids if i in details]


def pattern_advice(pattern: Pattern, details: dict[str, dict], agent_names) -> SkillAdvice:
    return skill_advice(pattern_records(pattern, details), agent_names=agent_names)


def _stored_pattern_advice(company: Company, pattern: Pattern, agent_names) -> SkillAdvice:
    """What the pattern's reports support, read from the stored reports themselves."""
    rows = {
        str(row["id"]): row
        for row in ExecutionReport.objects.filter(
            company=company, pk__in=pattern.report_ids
        ).values(*REPORT_FIELDS)
    }
    return pattern_advice(pattern, rows, agent_names)


def _trajectories(company: Company, since: datetime, until: datetime):
    rows = ExecutionReport.objects.filter(
        company=company, created_at__gte=since, created_at__lt=until
    ).values(*REPORT_FIELDS)
    details, trajectories = {}, []
    for row in rows.iterator(chunk_size=2000):
        names = tuple(
            str(call.get("name", "")) for call in row["tool_calls"] or [] if isinstance(call, dict)
        )
        trajectories.append(
            Trajectory(
                report_id=str(row["id"]),
                agent_id=row["agent_id"],
                outcome=row["outcome"],
                task_type=row["task_type"],
                error_category=row["error_category"],
                tool_names=names,
            )
        )
        details[str(row["id"])] = row
    return trajectories, details


def previously_proposed(company: Company, pattern: Pattern, *, exclude_item=None) -> bool:
    """A pending item for the pattern, or a decided/expired one carrying as many reports.
    ``exclude_item``: an item not to count (a re-queued draft's own rule item)."""
    previous = ApprovalItem.objects.filter(
        company=company,
        action_type__in=[ACTION_PROMOTION, ACTION_CONFLICT],
        metadata__pattern=pattern.key,
    )
    if exclude_item is not None:
        previous = previous.exclude(pk=exclude_item)
    previous = previous.values_list("status", "evidence__report_count")
    for status, count in previous:
        if status == ApprovalItem.Status.PENDING:
            return True
        if (count or 0) >= len(pattern.reports):  # rejected/approved/expired, no new evidence
            return True
    return False


@dataclass
class Candidates:
    """Every pattern of the window that passes the thresholds (no cap, no history check)."""

    reports_scanned: int
    patterns: list[Pattern]
    eligible: list[Pattern]
    details: dict[str, dict]


def eligible_candidates(*, company: Company, now: datetime) -> Candidates:
    """Group the window's reports and apply the thresholds (reads only)."""
    config = company_config(company).memory.procedural.evolver
    trajectories, details = _trajectories(company, now - timedelta(days=config.window_days), now)
    patterns = group_trajectories(trajectories)
    eligible = eligible_patterns(
        patterns,
        min_agents=config.min_agents_seen_pattern,
        min_confidence=config.min_confidence_for_org_promotion,
        max_proposals=len(patterns) or 1,
    )
    return Candidates(len(trajectories), patterns, eligible, details)


def plan_cycle(*, company: Company, now: datetime | None = None) -> CyclePlan:
    """What a cycle would draft: the eligible patterns not yet proposed and not waiting for
    a draft retry, at most ``max_proposals_per_cycle`` (reads only)."""
    now = now or timezone.now()
    config = company_config(company).memory.procedural.evolver
    found = eligible_candidates(company=company, now=now)
    plan = CyclePlan(
        reports_scanned=found.reports_scanned, patterns=found.patterns, details=found.details
    )
    awaiting = set(
        DraftFailure.objects.filter(company=company, status__in=OPEN_DRAFT_STATUSES).values_list(
            "pattern", flat=True
        )
    )
    for pattern in found.eligible:
        if pattern.key in awaiting:
            plan.awaiting_retry.append(pattern.key)
        elif previously_proposed(company, pattern):
            plan.already_proposed.append(pattern.key)
        elif len(plan.eligible) < config.max_proposals_per_cycle:
            plan.eligible.append(pattern)
    return plan


def existing_skills(company: Company) -> list[Skill]:
    """Every live org skill a proposal is judged against: the live procedure facts — an
    approved or operator skill's stored structure (while the fact is still the version it
    was published as), a free-text procedure fact as its text reads
    (:func:`~memory.procedural.evolver.skill_text.parse`) — and the lesson pool's skills
    (their stored structure; ``kind`` ``memory``)."""
    facts = list(
        OrgFact.objects.filter(
            company=company, category=PROCEDURE, retracted_at__isnull=True
        ).order_by("created_at")
    )
    structured = {
        row.fact_id: row
        for row in OrgSkill.objects.filter(company=company, fact__in=[f.pk for f in facts])
    }
    skills = []
    for fact in facts:
        row = structured.get(fact.pk)
        if row is not None and row.fact_version == fact.version:
            condition, action, confidence = row.condition, row.action, row.confidence
        else:
            condition, action, confidence = skill_text.parse(fact.content, fact.tags)
        skills.append(
            Skill(
                condition=condition,
                action=action,
                confidence=confidence,
                ref=str(fact.fact_id),
                content=fact.content,
            )
        )
    pool = org_skills(company=company).filter(source=OrgSkill.Source.LESSON_POOL)
    for row in pool.order_by("created_at", "id"):
        skills.append(
            Skill(
                condition=row.condition,
                action=row.action,
                confidence=row.confidence,
                ref=str(row.memory_id),
                content=row.discovery,
                kind="memory",
            )
        )
    return skills


def skill_evolver_run_now(
    *, company: Company, trigger: str = "command", progress: Progress | None = None
) -> EvolverReport | None:
    """One cycle now (``manage.py run_skill_evolver``'s; the schedule's is a durable job,
    :mod:`memory.procedural.evolver.cycles`). With an LLM configured it runs while holding
    one of the company's LLM slots (:mod:`synthorg.llm.slots`) for the whole cycle; with
    every slot taken nothing runs and ``None`` is returned (the command says so). Without
    an LLM no slot is needed."""
    provider = completion_provider_for(company=company)
    if provider is None:
        return skill_evolver_run(company=company, trigger=trigger, progress=progress)
    close = getattr(provider, "close", None)
    if close is not None:
        close()
    with company_llm_slot(company.pk) as slot:
        if not slot:
            return None
        return skill_evolver_run(company=company, trigger=trigger, progress=progress)


def skill_evolver_run(
    *,
    company: Company,
    trigger: str = "schedule",
    now: datetime | None = None,
    progress: Progress | None = None,
) -> EvolverReport:
    """Run one cycle and record it. Never raises for an LLM or per-pattern problem."""
    say = progress or (lambda message: None)
    started = timezone.now()
    now = now or started
    config = company_config(company).memory.procedural.evolver
    report = EvolverReport(
        company=company,
        trigger=trigger,
        started_at=started,
        window_start=now - timedelta(days=config.window_days),
        window_end=now,
    )
    if not config.enabled:
        logger.info("SKILL_EVOLVER_DISABLED company=%s", company.slug)
        say("evolver disabled for this company (memory.procedural.evolver.enabled: false)")
        return _finish(report, EvolverReport.Status.DISABLED)
    logger.info(
        "SKILL_EVOLVER_CYCLE_START company=%s window_days=%d", company.slug, config.window_days
    )
    try:
        return _cycle(company=company, report=report, now=now, say=say)
    except Exception as exc:  # recorded, logged; the schedule keeps running
        logger.exception("SKILL_EVOLVER_CYCLE_FAILED company=%s", company.slug)
        report.error = f"{type(exc).__name__}: {exc}"[:2000]
        return _finish(report, EvolverReport.Status.FAILED)


def _cycle(*, company: Company, report: EvolverReport, now: datetime, say: Progress):
    config = company_config(company).memory.procedural.evolver
    plan = plan_cycle(company=company, now=now)
    report.reports_scanned = plan.reports_scanned
    report.patterns_found = len(plan.patterns)
    report.patterns_eligible = (
        len(plan.eligible) + len(plan.already_proposed) + len(plan.awaiting_retry)
    )
    report.skipped_already_proposed = len(plan.already_proposed)
    report.skipped_awaiting_retry = len(plan.awaiting_retry)
    say(
        f"{plan.reports_scanned} reports, {len(plan.patterns)} patterns, "
        f"{len(plan.eligible)} to draft ({len(plan.already_proposed)} already proposed, "
        f"{len(plan.awaiting_retry)} awaiting a draft retry)"
    )
    live_procedures = OrgFact.objects.filter(
        company=company, category=PROCEDURE, retracted_at__isnull=True
    ).count()
    if live_procedures >= config.max_org_entries:
        say(f"org memory holds {live_procedures} procedures (max_org_entries reached)")
        return _finish(report, EvolverReport.Status.ORG_FULL)
    if not plan.eligible:
        return _complete(report, company)
    provider = completion_provider_for(company=company)
    if provider is None:
        return _rule_cycle(company=company, report=report, plan=plan, say=say)
    report.method = "llm"
    procedural = company_config(company).memory.procedural
    details = plan.details
    existing = existing_skills(company)
    agent_names = dict(Agent.objects.filter(company=company).values_list("pk", "name"))
    verdicts: dict[str, int] = {}
    try:
        for n, pattern in enumerate(plan.eligible, 1):
            say(
                f"[{n}/{len(plan.eligible)}] drafting {pattern.key} "
                f"(confidence {pattern.confidence})"
            )
            records = pattern_records(pattern, details)
            found = skill_advice(records, agent_names=agent_names)
            payload = drafting.evidence_payload(
                pattern=pattern.key,
                kind=pattern.kind,
                rate=pattern.rate,
                agents=len(pattern.agent_ids),
                reports=records,
            )
            try:
                proposal, _ = drafting.draft(
                    provider,
                    payload,
                    found=found,
                    records=records,
                    model=procedural.model,
                    temperature=procedural.temperature,
                    max_tokens=procedural.max_tokens,
                )
            except LLMError as exc:
                reason = failure_reason(exc)
                draft_failed(report, pattern.key, reason)
                say(f"    draft failed: {reason} (retried by the draft retry schedule)")
                continue
            except ProposalError as exc:
                # The model answered, but nothing usable: the rule draft stands in at once
                # (never worse than no LLM), with the reason in the item's evidence.
                reason = failure_reason(exc)
                report.drafts_failed += 1
                line = f"draft of {pattern.key} refused: {reason} (the rule draft stands in)"
                report.error = "\n".join(filter(None, [report.error, line]))[:2000]
                logger.warning("skill evolver %s", line)
                say(f"    {line}")
                item = emit_once(
                    company,
                    pattern,
                    rule_proposal(company, pattern, details, agent_names),
                    existing,
                    agent_names,
                    verdicts,
                    method="rule",
                    extra_evidence={"llm_failure": {"reason": reason, "attempts": 1}},
                )
                count_item(report, item, say)
                continue
            item = emit_once(company, pattern, proposal, existing, agent_names, verdicts)
            count_item(report, item, say)
    finally:
        close = getattr(provider, "close", None)
        if close is not None:
            close()
    report.verdicts = verdicts
    return _complete(report, company)


def _rule_cycle(*, company: Company, report: EvolverReport, plan: CyclePlan, say: Progress):
    """No LLM configured: draft each eligible pattern from its member lessons' own text
    (:mod:`memory.procedural.evolver.rule_drafting`); the items carry ``method: rule``."""
    logger.warning("skill evolver of %s: no LLM configured; drafting from lessons", company.slug)
    report.method = "rule"
    existing = existing_skills(company)
    agent_names = dict(Agent.objects.filter(company=company).values_list("pk", "name"))
    verdicts: dict[str, int] = {}
    for n, pattern in enumerate(plan.eligible, 1):
        say(f"[{n}/{len(plan.eligible)}] drafting {pattern.key} from lessons (no LLM)")
        proposal = rule_proposal(company, pattern, plan.details, agent_names)
        item = emit_once(company, pattern, proposal, existing, agent_names, verdicts, method="rule")
        count_item(report, item, say)
    report.verdicts = verdicts
    return _complete(report, company)


def rule_proposal(company: Company, pattern: Pattern, details: dict[str, dict], agent_names):
    """The pattern drafted from its member reports' fields (no LLM)."""
    return rule_draft(
        pattern=pattern.key,
        confidence=pattern.confidence,
        reports=pattern_records(pattern, details),
        agent_names=agent_names,
    )


def draft_failed(report: EvolverReport, pattern: str, reason: str) -> None:
    """Count a failed draft on the run; its :class:`DraftFailure` is written with the run."""
    report.drafts_failed += 1
    # The reason is what a user needs ("model not found", "no model to ask"): keep it on
    # the report and the draft failure, not only in the log.
    line = f"draft of {pattern} failed: {reason}"
    report.error = "\n".join(filter(None, [report.error, line]))[:2000]
    logger.warning("skill evolver draft for %s failed: %s", pattern, reason)
    _new_failures(report).append((pattern, reason))


def _new_failures(report: EvolverReport) -> list[tuple[str, str]]:
    if not hasattr(report, "_new_draft_failures"):
        report._new_draft_failures = []  # type: ignore[attr-defined]
    return report._new_draft_failures  # type: ignore[attr-defined]


def count_item(report: EvolverReport, item: ApprovalItem | None, say: Progress) -> None:
    if item is None:
        say("    already proposed meanwhile: nothing emitted")
        return
    report.items.append(str(item.pk))
    if item.action_type == ACTION_CONFLICT:
        report.conflicts_escalated += 1
    else:
        report.proposals_emitted += 1
    say(f"    → {item.action_type} ({item.evidence['verdict']}) {item.pk}")


def emit_once(
    company,
    pattern: Pattern,
    proposal,
    existing,
    agent_names,
    verdicts,
    method: str = "llm",
    *,
    exclude_item=None,
    extra_evidence: dict | None = None,
) -> ApprovalItem | None:
    """Emit the pattern's item unless it was proposed meanwhile (``None`` then). The check
    and the emission hold a transaction-level advisory lock on (company, pattern), so two
    runs drafting the same pattern at once emit one item."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))",
                [f"skill-evolver:{company.pk}:{pattern.key}"],
            )
        if previously_proposed(company, pattern, exclude_item=exclude_item):
            return None
        return _emit(
            company,
            pattern,
            proposal,
            existing,
            agent_names,
            verdicts,
            method=method,
            extra_evidence=extra_evidence,
        )


def _emit(
    company,
    pattern: Pattern,
    proposal,
    existing,
    agent_names,
    verdicts,
    method: str = "llm",
    extra_evidence: dict | None = None,
) -> ApprovalItem:
    found = _stored_pattern_advice(company, pattern, agent_names)
    if not proposal.advice:
        proposal = proposal.model_copy(update={"advice": found.advice.as_dict()})
    tiers = proposal.model_dump(mode="json")
    content = skill_text.render(tiers)
    tiers["content"] = content
    contradicts = contradicted_by(
        found.advice, advising_entries(company=company, about=found.advice)
    )
    confidence = pattern.confidence
    judgement = judge(
        Skill(condition=proposal.condition, action=proposal.action, confidence=confidence),
        existing,
    )
    verdicts[judgement.verdict.value] = verdicts.get(judgement.verdict.value, 0) + 1
    rate = pattern.rate if pattern.kind == "failure" else 1 - pattern.rate
    other = judgement.existing
    evidence = {
        "pattern": pattern.key,
        "kind": pattern.kind,
        "report_ids": pattern.report_ids,
        "report_count": len(pattern.reports),
        "population": pattern.population,
        "agent_ids": pattern.agent_ids,
        "agents": [agent_names.get(a, str(a)) for a in pattern.agent_ids],
        "failure_rate": round(rate, 4),
        "confidence": confidence,
        "verdict": judgement.verdict.value,
        "condition_jaccard": round(judgement.condition_jaccard, 4),
        "action_jaccard": round(judgement.action_jaccard, 4),
        "condition_coverage": round(judgement.condition_coverage, 4),
        "method": method,
        **found.as_evidence(),
        "contradicts": contradicts,
        **(extra_evidence or {}),
    }
    metadata = {"pattern": pattern.key, "proposal": tiers, "scope": "org", "method": method}
    if judgement.verdict is Verdict.CONFLICT:
        evidence["existing"] = other.as_entry()
        evidence["proposed"] = content
        item = approval_request(
            company=company,
            action_type=ACTION_CONFLICT,
            title=f"Conflicting org skill for {pattern.key}"[:200],
            description=(
                "The evolver found a pattern whose proposed action contradicts an existing "
                "org skill for the same situation. Approve to publish the proposed skill and "
                "retract the existing one; reject to keep the existing skill."
            ),
            risk_level=ApprovalItem.RiskLevel.HIGH,
            source=SOURCE,
            requested_by=SOURCE,
            evidence=evidence,
            metadata=metadata,
        )
        logger.warning(
            "SKILL_EVOLVER_CONFLICT_DETECTED company=%s pattern=%s existing=%s item=%s",
            company.slug,
            pattern.key,
            other.ref,
            item.pk,
        )
        return item
    if judgement.verdict is Verdict.FULL:
        evidence["superseded"] = other.as_entry()
    description = (
        f"{len(pattern.agent_ids)} agents, {len(pattern.reports)} reports "
        f"({pattern.key}); confidence {confidence:.2f}. {found.support_note}"
    )
    if contradicts:
        evidence["verdict"] = Verdict.CONTRADICTS.value
        description += (
            f" It contradicts {len(contradicts)} live "
            f"{'entry' if len(contradicts) == 1 else 'entries'} (listed side by side): "
            "approving publishes it, and in every agent's context the org skill then wins "
            "over a contradicting lesson."
        )
    item = approval_request(
        company=company,
        action_type=ACTION_PROMOTION,
        title=clip(f"Org skill: {advice_title(found.advice)}", 200),
        description=description,
        risk_level=ApprovalItem.RiskLevel.MEDIUM,
        source=SOURCE,
        requested_by=SOURCE,
        evidence=evidence,
        metadata=metadata,
    )
    logger.info(
        "SKILL_EVOLVER_PROPOSAL_EMITTED company=%s pattern=%s verdict=%s item=%s",
        company.slug,
        pattern.key,
        judgement.verdict.value,
        item.pk,
    )
    return item


def _complete(report: EvolverReport, company: Company) -> EvolverReport:
    _finish(report, EvolverReport.Status.COMPLETED)
    logger.info(
        "SKILL_EVOLVER_CYCLE_COMPLETE company=%s reports=%d patterns=%d emitted=%d conflicts=%d",
        company.slug,
        report.reports_scanned,
        report.patterns_found,
        report.proposals_emitted,
        report.conflicts_escalated,
    )
    return report


def _finish(report: EvolverReport, status: str) -> EvolverReport:
    """Save the run, and a :class:`DraftFailure` for each draft that failed in it."""
    report.status = status
    report.finished_at = max(timezone.now(), report.started_at)
    with transaction.atomic():
        report.save()
        for pattern, reason in _new_failures(report):
            draft_failure_open(
                report=report, pattern=pattern, reason=reason, now=report.finished_at
            )
        _new_failures(report).clear()
    return report


def run_finish(report: EvolverReport, status: str) -> EvolverReport:
    """Record a run that is not a cycle (the draft retry schedule's)."""
    return _finish(report, status)
