"""Compatibility for one release: tasks queued before wave 3 name ``memory.reembed.tasks.*``.

The tasks live in :mod:`memory.core.tasks`. Remove this module in the next release.
"""

from memory.core.tasks import resume_reembed_jobs, run_reembed_job  # noqa: F401
