"""Durable jobs: one abstract job, one append-only history, one retry policy, one claim
protocol with a lease, and one per-company dispatcher under the LLM slots.

A family registers a :class:`~synthorg.jobs.registry.JobKind` in its ``AppConfig.ready``
(:func:`~synthorg.jobs.registry.register_job_kind`); see
``docs/architecture/extension-points.md``.
"""
