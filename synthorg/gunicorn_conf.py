"""gunicorn settings used by ``manage.py serve`` (and usable in production:
``gunicorn -k uvicorn_worker.UvicornWorker -c python:synthorg.gunicorn_conf
synthorg.asgi:application``; ``synthorg.wsgi:application`` serves the REST API without MCP)."""

import logging
import sys

# gunicorn's exit status for "worker failed to boot": the arbiter stops instead of respawning.
WORKER_BOOT_ERROR = 3


def post_worker_init(worker) -> None:
    """Refuse the development key beyond loopback, then load the embedding model before the
    worker takes requests.

    The first search would otherwise pay the ~1 s model load, and ``/healthz`` reports the
    embedder as not ready until it is loaded. A failure is logged, not fatal: memory search
    degrades to the sparse leg until the model can be loaded.
    """
    from synthorg.embedding import EmbeddingError, default_embedder
    from synthorg.secret_key_guard import bind_host, development_key_refusal

    refusal = development_key_refusal(bind_host(bind) for bind in worker.cfg.bind)
    if refusal:
        worker.log.error(refusal)
        sys.exit(WORKER_BOOT_ERROR)
    try:
        default_embedder().warm_up()
    except EmbeddingError:
        logging.getLogger("synthorg.embedding").exception("embedder warm-up failed")
