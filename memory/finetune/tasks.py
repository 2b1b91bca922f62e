"""django-q2 tasks of fine-tuning: thin interfaces that call one service."""

from memory.finetune.services import (
    fine_tune_execute,
    fine_tune_run_company,
    fine_tune_runs_revive,
    fine_tune_synthesize,
)


def run_fine_tune(run_id: str) -> str:
    """Train a fine-tune run for up to its task budget (it queues its own continuation);
    returns its status."""
    return fine_tune_execute(run_id)


def run_fine_tune_synthesis(run_id: str) -> str:
    """On the LLM cluster: generate a fine-tune run's synthetic queries, then queue its
    training."""
    return fine_tune_synthesize(run_id)


def run_company_fine_tunes(company_id: int) -> list[str]:
    """Work on the company's planned fine-tune run (queued by the schedule)."""
    return fine_tune_run_company(company_id)


def revive_fine_tune_runs() -> dict[str, int]:
    """Schedule: reclaim the fine-tune runs whose worker died (their lease passed) and queue
    them again, as the retry policy allows; queue the planned runs whose task was lost."""
    revived = fine_tune_runs_revive()
    return {
        "resumed": sum(1 for r in revived if r.outcome == "resumed"),
        "failed": sum(1 for r in revived if r.outcome == "failed"),
    }
