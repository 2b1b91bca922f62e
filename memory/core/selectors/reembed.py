"""Reads of re-embedding jobs: progress, and what a search reports while one runs."""

from __future__ import annotations

from memory.core.models.reembed import ReembedJob

#: While it runs, the dense leg sees only the rows already re-embedded (the others keep
#: their old vectors, which are never compared with the query's): search answers from those
#: and the sparse leg and says so (``degraded`` gets ``"reembedding"``).
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


def reembedding_sql(company_id: int, embedder_id: str, dims: int) -> tuple[str, list]:
    """A SQL expression for the current job (running, working or failed) moving
    ``company_id`` to ``(embedder_id, dims)`` (JSON ``{job, done, total}``, NULL if none),
    for a statement the search sends anyway: one lookup in the partial unique index on
    current jobs, no extra round trip."""
    return (
        "(SELECT json_build_object('job', j.id, 'done', j.memories_done + j.facts_done, "
        "'total', j.memories_total + j.facts_total) FROM memory_reembedjob j "
        "WHERE j.company_id = %s AND j.status IN ('running', 'working', 'failed') "
        "AND j.to_embedder_id = %s "
        "AND j.to_dims = %s)",
        [company_id, embedder_id, dims],
    )


def reembedding_progress(value: dict | None) -> dict | None:
    """What the search reports, from :func:`reembedding_sql`'s value."""
    if not value:
        return None
    done, total = int(value["done"]), int(value["total"])
    share = 1.0 if total == 0 else round(done / total, 4)
    return {"job": int(value["job"]), "done": done, "total": total, "share_done": share}
