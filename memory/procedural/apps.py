from django.apps import AppConfig


class ProceduralConfig(AppConfig):
    name = "memory.procedural"
    label = "procedural"
    verbose_name = "Procedural learning"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memory.procedural.config import SECTIONS
        from synthorg.company_config.sections import register_config_sections

        register_config_sections(*SECTIONS)

        from memory.procedural.schedules import compressor_schedules, procedural_schedules
        from synthorg.schedules import register_schedule_provider

        register_schedule_provider(procedural_schedules)
        register_schedule_provider(compressor_schedules)

        from memory.procedural.services.capture import CAPTURE_JOB
        from synthorg.jobs.registry import register_job_kind

        register_job_kind(CAPTURE_JOB)

        from memory.procedural.portability import (
            COMPRESSED_EXPERIENCES,
            EXECUTION_REPORT_SUBJECTS,
            EXECUTION_REPORTS,
            ORG_SKILLS,
        )
        from persistence.content_registry import register_content_kind

        register_content_kind(ORG_SKILLS)
        register_content_kind(EXECUTION_REPORTS)
        register_content_kind(EXECUTION_REPORT_SUBJECTS)
        register_content_kind(COMPRESSED_EXPERIENCES)

        from memory.core.extensions import on_archive_restored, on_archiving
        from memory.procedural.services.lesson_archive import lesson_restore, lesson_snapshot

        on_archiving(lesson_snapshot)
        on_archive_restored(lesson_restore)

        from memory.core.extensions import register_training_pair_source
        from memory.procedural.selectors import lesson_training_pairs

        register_training_pair_source("lesson", lesson_training_pairs)

        from memory.procedural.services.org_pool import org_pool_apply
        from memory.procedural.services.org_pool_proposals import (
            ACTION_ORG_POOL,
            ACTION_ORG_POOL_CONFLICT,
            LESSON_PRESENTER,
        )
        from orgmemory.approval_presenters import register_approval_presenter
        from orgmemory.services.approvals import register_approval_applier

        register_approval_applier(ACTION_ORG_POOL, org_pool_apply)
        register_approval_applier(ACTION_ORG_POOL_CONFLICT, org_pool_apply)
        register_approval_presenter(ACTION_ORG_POOL, LESSON_PRESENTER)
        register_approval_presenter(ACTION_ORG_POOL_CONFLICT, LESSON_PRESENTER)

        from memory.core.extensions import on_company_maintained
        from memory.procedural.services.wiki import wiki_after_maintenance

        on_company_maintained(wiki_after_maintenance)
