"""django-q2 tasks of fine-tuning: thin interfaces that call one service."""

from memory.finetune.services import fine_tune_execute, fine_tune_synthesize


def run_fine_tune(run_id: str) -> str:
    """Train a fine-tune run for up to its task budget (it queues its own continuation);
    returns its status."""
    return fine_tune_execute(run_id)


def run_fine_tune_synthesis(run_id: str) -> str:
    """On the LLM cluster: generate a fine-tune run's synthetic queries, then queue its
    training."""
    return fine_tune_synthesize(run_id)
