"""``manage.py reembed {start,resume,status} [COMPANY]``

``start COMPANY``: start a re-embedding job if the company's vectors are not all its current
embedder's (or its index is missing), then run it here; ``resume COMPANY``: run the
company's running job here (after an interruption, or instead of waiting for the workers);
``status [COMPANY]``: the jobs of one company (or every running job). ``start``/``resume``
draw a progress bar on stderr; Ctrl-C stops after the batch in flight is committed and the
job resumes from there later. ``--max-batches`` stops after that many batches.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from memory.core.models.reembed import ACTIVE_STATUSES, ReembedJob
from memory.core.selectors.reembed import job_progress
from memory.core.services.reembed import reembed_job_run, reembed_job_start, running_job
from persistence.models import Company
from synthorg.errors import DomainError

BAR_WIDTH = 30


def progress_line(job: ReembedJob) -> str:
    filled = int(BAR_WIDTH * job.share_done)
    return (
        f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {job.share_done * 100:5.1f}% "
        f"memories {job.memories_done}/{job.memories_total} "
        f"facts {job.facts_done}/{job.facts_total} ({job.batches} batches, {job.phase})"
    )


class Command(BaseCommand):
    help = "Start, resume or inspect re-embedding jobs (after a company's embedder changed)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=["start", "resume", "status"])
        parser.add_argument("company", nargs="?", help="Company slug or id.")
        parser.add_argument("--batch-size", type=int, default=100)
        parser.add_argument("--max-batches", type=int, default=None)

    def handle(self, *args, action, company=None, batch_size=100, max_batches=None, **options):
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        target = self._company(company) if company else None
        if action == "status":
            self._status(target)
            return
        if target is None:
            raise CommandError(f"{action} needs a company")
        try:
            if action == "start":
                job = reembed_job_start(company=target, via="command")
                if job is None:
                    self.stdout.write(
                        f"{target.slug}: every vector is already the current embedder's; "
                        "nothing to do."
                    )
                    return
                self.stdout.write(f"{target.slug}: job {job.pk} → {job.to_embedder_id}")
            else:
                job = running_job(target)
        except DomainError as exc:
            raise CommandError(str(exc)) from exc
        self._run(job, batch_size, max_batches)

    def _run(self, job: ReembedJob, batch_size: int, max_batches: int | None) -> None:
        tty = sys.stderr.isatty()

        def show(current: ReembedJob) -> None:
            line = progress_line(current)
            self.stderr.write(f"\r{line}" if tty else line, ending="")
            if not tty:
                self.stderr.write("")
            self.stderr.flush()

        show(job)
        try:
            progress = reembed_job_run(
                job=job, batch_size=batch_size, max_batches=max_batches, on_batch=show
            )
        except KeyboardInterrupt:
            self.stderr.write("\ninterrupted: the committed batches stay done; resume later")
            raise SystemExit(130) from None
        if tty:
            self.stderr.write("")
        job.refresh_from_db()
        if progress.error:
            raise CommandError(f"job {job.pk} paused: {progress.error}")
        self.stdout.write(
            f"job {job.pk}: {job.status} — {job.done}/{job.total} rows "
            f"({progress.batches} batches in this run)"
        )

    def _status(self, company: Company | None) -> None:
        jobs = ReembedJob.objects.select_related("company")
        if company is not None:
            jobs = jobs.filter(company=company)[:10]
        else:
            jobs = jobs.filter(status__in=ACTIVE_STATUSES)
        rows = list(jobs)
        if not rows:
            self.stdout.write("No re-embedding jobs.")
            return
        for job in rows:
            info = job_progress(job)
            self.stdout.write(
                f"job {info['job']} {job.company.slug}: {info['status']} "
                f"{info['from_embedder_id'] or '-'} → {info['to_embedder_id']} "
                f"({info['to_dims']} dims) {progress_line(job)}"
                + (f" last error: {job.reason}" if job.reason else "")
            )

    def _company(self, value: str) -> Company:
        company = Company.objects.filter(slug=value).first()
        if company is None and value.isdigit():
            company = Company.objects.filter(pk=int(value)).first()
        if company is None:
            raise CommandError(f"No company {value!r}.")
        return company
