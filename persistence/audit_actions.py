"""Every audit action of the service, in one place: :class:`AuditAction`.

:func:`persistence.services.audit.audit_record` accepts only these (an unknown action is a
bug, refused before anything is written), so the audit log's ``action_type`` values are a
closed, documented set: the console's and admin's filters and the docs list them from here.
Values are dotted ``<target>.<event>`` names and never change (stored rows keep them).
"""

from __future__ import annotations

from enum import StrEnum


class AuditAction(StrEnum):
    # agent
    AGENT_CREATED = "agent.created"
    AGENT_ERASED = "agent.erased"
    AGENT_UPDATED = "agent.updated"
    # api_key
    API_KEY_ISSUED = "api_key.issued"
    API_KEY_REVOKED = "api_key.revoked"
    # approval
    APPROVAL_APPROVED = "approval.approved"
    APPROVAL_CONSUMED = "approval.consumed"
    APPROVAL_EXPIRED = "approval.expired"
    APPROVAL_REJECTED = "approval.rejected"
    APPROVAL_REQUESTED = "approval.requested"
    # company
    COMPANY_CONFIG_CHANGED = "company.config_changed"
    COMPANY_RENAMED = "company.renamed"
    # content
    CONTENT_EXPORTED = "content.exported"
    CONTENT_IMPORTED = "content.imported"
    # conversation
    CONVERSATION_DELETED = "conversation.deleted"
    CONVERSATION_SESSION_PURGED = "conversation.session_purged"
    # core_policy
    CORE_POLICY_REORDERED = "core_policy.reordered"
    # dream_request
    DREAM_REQUEST_REQUEUED = "dream_request.requeued"
    # evolver_draft
    EVOLVER_DRAFT_REQUEUED = "evolver_draft.requeued"
    # execution_capture
    EXECUTION_CAPTURE_REQUEUED = "execution_capture.requeued"
    # execution_report
    EXECUTION_REPORT_SUBMITTED = "execution_report.submitted"
    # extraction_run
    EXTRACTION_RUN_REQUEUED = "extraction_run.requeued"
    # fine_tune_run
    FINE_TUNE_RUN_REQUEUED = "fine_tune_run.requeued"
    # membership
    MEMBERSHIP_CHANGED = "membership.changed"
    MEMBERSHIP_REMOVED = "membership.removed"
    # memory
    MEMORY_ARCHIVE_RESTORED = "memory.archive_restored"
    MEMORY_CORE_WRITTEN = "memory.core_written"
    MEMORY_CORRECTED = "memory.corrected"
    MEMORY_DELETED = "memory.deleted"
    MEMORY_FINE_TUNE_AUTO_RESUME_EXHAUSTED = "memory.fine_tune.auto_resume_exhausted"
    MEMORY_FINE_TUNE_AUTO_RESUMED = "memory.fine_tune.auto_resumed"
    MEMORY_FINE_TUNE_CANCELLED = "memory.fine_tune.cancelled"
    MEMORY_FINE_TUNE_CHECKPOINT_DELETED = "memory.fine_tune.checkpoint_deleted"
    MEMORY_FINE_TUNE_NOT_PROMOTED = "memory.fine_tune.not_promoted"
    MEMORY_FINE_TUNE_PROMOTED = "memory.fine_tune.promoted"
    MEMORY_FINE_TUNE_RESUMED = "memory.fine_tune.resumed"
    MEMORY_FINE_TUNE_ROLLED_BACK = "memory.fine_tune.rolled_back"
    MEMORY_FINE_TUNE_STARTED = "memory.fine_tune.started"
    MEMORY_MAINTENANCE_RUN = "memory.maintenance_run"
    MEMORY_REEMBED_COMPLETED = "memory.reembed_completed"
    MEMORY_REEMBED_STARTED = "memory.reembed_started"
    MEMORY_REEMBED_SUPERSEDED = "memory.reembed_superseded"
    MEMORY_RETENTION_DELETED = "memory.retention_deleted"
    MEMORY_SESSION_ENDED = "memory.session_ended"
    MEMORY_SHARED_PUBLISHED = "memory.shared_published"
    MEMORY_SHARED_RETRACTED = "memory.shared_retracted"
    MEMORY_STORED = "memory.stored"
    MEMORY_UPDATED = "memory.updated"
    # org_fact
    ORG_FACT_PUBLISHED = "org_fact.published"
    ORG_FACT_RETRACTED = "org_fact.retracted"
    ORG_FACT_WRITE_DENIED = "org_fact.write_denied"
    # org_skill
    ORG_SKILL_APPLIED = "org_skill.applied"
    # org_write_request
    ORG_WRITE_REQUEST_APPROVED = "org_write_request.approved"
    ORG_WRITE_REQUEST_FILED = "org_write_request.filed"
    ORG_WRITE_REQUEST_REJECTED = "org_write_request.rejected"
    # procedural_lesson
    PROCEDURAL_LESSON_ORG_POOL_ADDED = "procedural_lesson.org_pool_added"
    # procedural_memory
    PROCEDURAL_MEMORY_APPLIED = "procedural_memory.applied"
    PROCEDURAL_MEMORY_PRUNED = "procedural_memory.pruned"
    # project
    PROJECT_CLOSED = "project.closed"
    PROJECT_DELETED = "project.deleted"
    # reembed_job
    REEMBED_JOB_REQUEUED = "reembed_job.requeued"
    # setting
    SETTING_CHANGED = "setting.changed"
    SETTING_DELETED = "setting.deleted"
    # subject (an end user)
    SUBJECT_ERASED = "subject.erased"
    # task
    TASK_DELETED = "task.deleted"
    # webhook_delivery
    WEBHOOK_DELIVERY_REQUEUED = "webhook_delivery.requeued"
    # wiki
    WIKI_EXPORTED = "wiki.exported"

    @classmethod
    def requeued(cls, target_type: str) -> AuditAction:
        """An operator re-queued a failed durable job whose audit target is ``target_type``."""
        return cls(f"{target_type}.requeued")

    @classmethod
    def fine_tune(cls, event: str) -> AuditAction:
        """A fine-tune run's event (``started``, ``promoted``, ``not_promoted`` …)."""
        return cls(f"memory.fine_tune.{event}")
