"""``manage.py run_maintenance [--company ID|SLUG] [--agent ID] [--dry-run]``

Runs the memory maintenance cycle (retention → consolidation → archival → max-memories) now,
for one agent, one company's agents, or every company; prints progress and a summary table.
A dry run does everything inside a rolled-back transaction (no LLM calls, nothing recorded).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory.core.models.maintenance import MaintenanceRun
from memory.core.services.maintenance import MaintenanceReport, run_maintenance
from memory.procedural.services.pruning import procedural_prune_agent
from persistence.models import Agent, Company
from persistence.selectors.config import company_config

# (header, width, MaintenanceReport.counts key) of the count columns, in table order.
COUNT_COLUMNS = (
    ("retention", 10, "retention_archived"),
    ("expired", 8, "expired_archived"),
    ("consol.", 8, "consolidated"),
    ("summaries", 10, "summaries_created"),
    ("capped", 8, "enforced_archived"),
    ("archived", 9, "archived"),
    ("deleted", 8, "deleted"),
)
COLUMNS = (
    ("agent", 8),
    ("status", 10),
    *((header, width) for header, width, _ in COUNT_COLUMNS),
    ("errors", 7),
    ("seconds", 8),
)


class Command(BaseCommand):
    help = "Run memory maintenance (retention, consolidation, archival, max-memories) now."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--company", help="Company id or slug (default: every company).")
        parser.add_argument("--agent", type=int, help="One agent id.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Compute everything, then roll it back."
        )

    def handle(self, *args, company=None, agent=None, dry_run=False, **options) -> None:
        agents = self._agents(company, agent)
        if not agents:
            self.stdout.write("No agents to maintain.")
            return
        reports: list[MaintenanceReport] = []
        paused: set[int] = set()
        for index, each in enumerate(agents, start=1):
            self._prune_procedural(each, index=index, total=len(agents), dry_run=dry_run)
            if agent is None and not company_config(each.company).memory.consolidation.enabled:
                if each.company_id not in paused:
                    paused.add(each.company_id)
                    self.stdout.write(
                        f"company {each.company.slug}: consolidation disabled (kill switch), "
                        "skipped"
                    )
                continue
            self.stdout.write(f"[{index}/{len(agents)}] agent {each.pk} ({each.name}) …", ending="")
            self.stdout.flush()
            report = run_maintenance(
                agent=each, trigger=MaintenanceRun.Trigger.COMMAND, dry_run=dry_run
            )
            self.stdout.write(f" {report.status} in {report.seconds:.2f}s")
            reports.append(report)
        self._table(reports, dry_run=dry_run)

    def _prune_procedural(self, agent: Agent, *, index: int, total: int, dry_run: bool) -> None:
        """Procedural pruning (``memory.procedural.pruning``) runs whatever the consolidation
        kill switch says: it archives lessons, it does not consolidate."""

        if company_config(agent.company).memory.procedural.pruning.strategy == "none":
            return
        result = procedural_prune_agent(agent=agent, dry_run=dry_run)
        if result.pruned or dry_run:
            self.stdout.write(
                f"[{index}/{total}] agent {agent.pk}: procedural pruning "
                f"{'would archive' if dry_run else 'archived'} {result.pruned} "
                f"(ttl {result.ttl}, pareto {result.pareto}), kept {result.kept}"
            )

    def _agents(self, company_arg, agent_id) -> list[Agent]:
        rows = Agent.objects.select_related("company").filter(is_active=True).order_by("pk")
        if company_arg is not None:
            lookup = {"pk": int(company_arg)} if company_arg.isdigit() else {"slug": company_arg}
            company = Company.objects.filter(**lookup).first()
            if company is None:
                raise CommandError(f"No company {company_arg!r}.")
            rows = rows.filter(company=company)
        if agent_id is not None:
            rows = rows.filter(pk=agent_id)
            if not rows.exists():
                raise CommandError(f"No active agent {agent_id} (in that company).")
        return list(rows)

    def _table(self, reports: list[MaintenanceReport], *, dry_run: bool) -> None:
        if not reports:
            return
        header = "".join(name.rjust(width) for name, width in COLUMNS)
        self.stdout.write("")
        self.stdout.write(("DRY RUN — nothing was changed\n" if dry_run else "") + header)
        totals = {key: 0 for _, _, key in COUNT_COLUMNS} | {"err": 0}
        seconds = 0.0
        for report in reports:
            counts = report.counts
            values = (
                report.agent_id,
                report.status,
                *(counts[key] for _, _, key in COUNT_COLUMNS),
                len(report.errors),
                f"{report.seconds:.2f}",
            )
            self.stdout.write(
                "".join(str(v).rjust(width) for v, (_, width) in zip(values, COLUMNS, strict=True))
            )
            for _, _, key in COUNT_COLUMNS:
                totals[key] += counts[key]
            totals["err"] += len(report.errors)
            seconds += report.seconds
            for error in report.errors:
                self.stderr.write(f"  agent {report.agent_id}: {error}")
        values = ("total", "", *totals.values(), f"{seconds:.2f}")
        self.stdout.write(
            "".join(str(v).rjust(width) for v, (_, width) in zip(values, COLUMNS, strict=True))
        )
