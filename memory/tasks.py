"""Compatibility for one release: tasks queued before wave 3 name ``memory.tasks.*``.

The tasks live in :mod:`memory.core.tasks`; ``manage.py sync_schedules`` rewrites the
schedules. Remove this module in the next release.
"""

from memory.core.tasks import (  # noqa: F401
    backfill_pending_embeddings,
    run_agent_maintenance,
    run_company_maintenance,
)
