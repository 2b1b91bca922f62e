"""django-q2 tasks: thin interfaces that call services."""

from persistence.services.system import cluster_heartbeat_record


def record_cluster_heartbeat(cluster: str | None = None) -> str:
    return cluster_heartbeat_record(cluster=cluster).isoformat()
