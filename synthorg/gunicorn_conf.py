"""gunicorn settings used by ``manage.py serve`` (and usable in production:
``gunicorn -k uvicorn_worker.UvicornWorker -c python:synthorg.gunicorn_conf
synthorg.asgi:application``; ``synthorg.wsgi:application`` serves the REST API without MCP)."""

import logging
import os
import sys

from synthorg.client_ip import parse_trusted_proxies


def trusted_forwarders(environ=os.environ) -> str:
    """gunicorn's ``forwarded_allow_ips``: the peers whose ``X-Forwarded-For`` (and
    ``-Proto``) uvicorn believes when it sets the client address Django sees as
    ``REMOTE_ADDR``. The same proxies as login throttling's (``SYNTHORG_TRUSTED_PROXIES``),
    else gunicorn's own ``FORWARDED_ALLOW_IPS``, else **none** — not gunicorn's default of
    loopback, under which any local process could forge client addresses."""
    proxies = environ.get("SYNTHORG_TRUSTED_PROXIES")
    if proxies is None:
        proxies = environ.get("FORWARDED_ALLOW_IPS", "")
        if proxies.strip() == "*":
            return "*"
    return ",".join(str(network) for network in parse_trusted_proxies(proxies))


forwarded_allow_ips = trusted_forwarders()

# gunicorn's exit status for "worker failed to boot": the arbiter stops instead of respawning.
WORKER_BOOT_ERROR = 3


def post_worker_init(worker) -> None:
    """Refuse the development key beyond loopback, then load the embedding model before the
    worker takes requests.

    The first search would otherwise pay the model load (measured:
    docs/benchmarks/http.md#per-request-levers-measured-by-hand), and ``/healthz`` reports the
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
