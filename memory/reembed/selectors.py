"""Reads of re-embedding jobs: progress, and what a search reports while one runs."""

from __future__ import annotations

from memory.reembed.models import ReembedJob

DEGRADED_REEMBEDDING = "reembedding"


def job_progress(job: ReembedJob) -> dict:
    """The job's progress as the API, the command and the admin show it."""
    return {
        "job": job.pk,
        "status": job.status,
        "phase": job.phase,
        "from_embedder_id": job.from_embedder_id,
        "to_embedder_id": job.to_embedder_id,
        "to_dims": job.to_dims,
        "memories_done": job.memories_done,
        "memories_total": job.memories_total,
        "facts_done": job.facts_done,
        "facts_total": job.facts_total,
        "share_done": job.share_done,
    }


def reembedding_status(company_id: int, embedder_id: str, dims: int) -> dict | None:
    """The running job moving ``company_id`` to the query's embedder, or ``None``.

    While it runs, the dense leg sees only the rows already re-embedded (the others keep
    their old vectors, which are never compared with the query's): search answers from
    those and the sparse leg and says so (``degraded`` gets ``"reembedding"``). One
    indexed lookup (the partial unique index on running jobs).
    """
    job = (
        ReembedJob.objects.filter(
            company_id=company_id,
            status=ReembedJob.Status.RUNNING,
            to_embedder_id=embedder_id,
            to_dims=dims,
        )
        .only("id", "memories_done", "memories_total", "facts_done", "facts_total")
        .first()
    )
    if job is None:
        return None
    return {
        "job": job.pk,
        "done": job.done,
        "total": job.total,
        "share_done": job.share_done,
    }
