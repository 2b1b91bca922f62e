from persistence.models.agents import Agent, AgentApiKey
from persistence.models.audit import AuditEntry
from persistence.models.projects import Project
from persistence.models.system import ClusterHeartbeat
from persistence.models.tenancy import Company, CompanyMembership

__all__ = [
    "Agent",
    "AgentApiKey",
    "AuditEntry",
    "ClusterHeartbeat",
    "Company",
    "CompanyMembership",
    "Project",
]
