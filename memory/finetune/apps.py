from django.apps import AppConfig


class FineTuneConfig(AppConfig):
    """Per-company query adapters: a leaf app. Nothing in the project imports it (an
    import-linter contract); it takes part through the extension points below, and the
    project names it only in ``INSTALLED_APPS`` and its URL includes."""

    name = "memory.finetune"
    label = "finetune"
    verbose_name = "Retrieval fine-tuning"

    def ready(self) -> None:
        from memory.finetune.config import SECTIONS
        from synthorg.company_config.sections import register_config_sections

        register_config_sections(*SECTIONS)

        from memory.core.extensions import QueryVectorAdapter, register_query_vector_adapter
        from memory.finetune.selectors import (
            adapt_fact_query_vector,
            apply_query_adapter,
            plan_query_adapter,
        )
        from memory.finetune.services import FINE_TUNE_JOB, FINE_TUNE_SYNTHESIS_JOB
        from memory.finetune.tools import FINE_TUNE_TOOLS
        from orgmemory.query_vectors import register_query_vector_transform
        from synthorg.jobs.registry import register_job_kind
        from synthorg.tools import register_tool

        # Memory searches and org-fact searches rank with the company's active adapter.
        register_query_vector_adapter(
            QueryVectorAdapter(plan=plan_query_adapter, apply=apply_query_adapter)
        )
        register_query_vector_transform(adapt_fact_query_vector)
        for spec in FINE_TUNE_TOOLS:
            register_tool(spec)
        register_job_kind(FINE_TUNE_JOB)  # the kernel reclaims, resumes and dispatches runs
        register_job_kind(FINE_TUNE_SYNTHESIS_JOB)  # synthesis waits for its turn on the slots
