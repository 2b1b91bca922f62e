from persistence.models.agents import Agent, AgentApiKey
from persistence.models.artifacts import Artifact
from persistence.models.audit import AuditEntry
from persistence.models.costs import CostRecord
from persistence.models.messaging import Message
from persistence.models.metrics import CollaborationMetric, TaskMetric
from persistence.models.presets import PersonalityPreset
from persistence.models.projects import Project
from persistence.models.runtime import (
    AgentRuntimeState,
    Checkpoint,
    Heartbeat,
    LifecycleEvent,
    ParkedContext,
)
from persistence.models.settings import Setting
from persistence.models.system import ClusterHeartbeat
from persistence.models.tasks import Task
from persistence.models.tenancy import Company, CompanyMembership

__all__ = [
    "Agent",
    "AgentApiKey",
    "AgentRuntimeState",
    "Artifact",
    "AuditEntry",
    "Checkpoint",
    "ClusterHeartbeat",
    "CollaborationMetric",
    "Company",
    "CompanyMembership",
    "CostRecord",
    "Heartbeat",
    "LifecycleEvent",
    "Message",
    "ParkedContext",
    "PersonalityPreset",
    "Project",
    "Setting",
    "Task",
    "TaskMetric",
]
