"""``manage.py run_skill_evolver COMPANY [--dry-run]``: one evolver cycle now, under one of
the company's LLM slots like the scheduled cycle. When every slot is busy nothing runs: the
command says so on stdout and exits 0 (busy slots are not an error; run it again later).
A failed cycle exits non-zero."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory.procedural.evolver.services import plan_cycle, skill_evolver_run_now
from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.llm.slots import company_llm_concurrency

SLOTS_BUSY = (
    "{company}: skipped, no evolver cycle ran: every LLM slot of the company is busy "
    "(SYNTHORG_LLM_COMPANY_CONCURRENCY={limit}); run the command again later"
)


class Command(BaseCommand):
    help = "Run the skill evolver for one company (slug or name); --dry-run only reports."

    def add_arguments(self, parser):
        parser.add_argument("company")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Group and score patterns and print them; no LLM call, nothing written.",
        )

    def handle(self, *args, company: str, dry_run: bool, **options):
        found = Company.objects.filter(slug=company).first() or (
            Company.objects.filter(name=company).first()
        )
        if found is None:
            raise CommandError(f"No company with slug or name {company!r}.")

        def progress(message: str) -> None:
            self.stderr.write(message)

        if dry_run:
            config = company_config(found).memory.procedural.evolver
            plan = plan_cycle(company=found)
            progress(
                f"{plan.reports_scanned} reports in the last {config.window_days} days, "
                f"{len(plan.patterns)} patterns (evolver enabled: {config.enabled})"
            )
            for pattern in plan.patterns:
                mark = (
                    "PROPOSE"
                    if pattern in plan.eligible
                    else ("already proposed" if pattern.key in plan.already_proposed else "below")
                )
                self.stdout.write(
                    f"{mark:>16}  {pattern.key}  agents={len(pattern.agent_ids)} "
                    f"reports={len(pattern.reports)} confidence={pattern.confidence}"
                )
            return
        report = skill_evolver_run_now(company=found, trigger="command", progress=progress)
        if report is None:
            self.stdout.write(
                SLOTS_BUSY.format(company=found.slug, limit=company_llm_concurrency())
            )
            return
        self.stdout.write(
            f"{report.status}: {report.reports_scanned} reports, {report.patterns_found} "
            f"patterns, {report.proposals_emitted} proposals, "
            f"{report.conflicts_escalated} conflicts escalated, verdicts {report.verdicts}"
        )
        if report.status == report.Status.FAILED:
            raise CommandError(report.error)
