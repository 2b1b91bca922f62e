"""Re-embedding a company's vectors after its embedder changes: a resumable background job.

``models`` (:class:`ReembedJob`: one running job per company, progress and cursors),
``services`` (start, run batches), ``selectors`` (progress, what search reports), ``tasks``
(q2), ``admin``; the command is ``manage.py reembed``.
"""
