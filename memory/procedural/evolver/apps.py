from django.apps import AppConfig


class EvolverConfig(AppConfig):
    name = "memory.procedural.evolver"
    label = "evolver"
    verbose_name = "Skill evolver"

    def ready(self) -> None:
        from memory.procedural.evolver.config import CHECKS, SECTIONS
        from synthorg.company_config.sections import register_config_sections

        # under memory.procedural, which memory.procedural (listed first) registered
        register_config_sections(*SECTIONS, checks=CHECKS)

        from memory.procedural.evolver.apply import conflict_apply, promotion_apply
        from memory.procedural.evolver.presentation import EVOLVER_PRESENTER
        from memory.procedural.evolver.schedules import evolver_schedules
        from memory.procedural.evolver.services import ACTION_CONFLICT, ACTION_PROMOTION
        from orgmemory.approval_presenters import register_approval_presenter
        from orgmemory.services.approvals import register_approval_applier
        from synthorg.schedules import register_schedule_provider

        register_approval_applier(ACTION_PROMOTION, promotion_apply)
        register_approval_applier(ACTION_CONFLICT, conflict_apply)
        register_approval_presenter(ACTION_PROMOTION, EVOLVER_PRESENTER)
        register_approval_presenter(ACTION_CONFLICT, EVOLVER_PRESENTER)
        register_schedule_provider(evolver_schedules)

        from memory.procedural.evolver.cycles import EVOLVER_CYCLE_JOB
        from memory.procedural.evolver.draft_retry import DRAFT_JOB
        from synthorg.jobs.registry import register_job_kind

        register_job_kind(DRAFT_JOB)
        register_job_kind(EVOLVER_CYCLE_JOB)  # the scheduled cycle takes its turn on the slots
