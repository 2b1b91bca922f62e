"""``GET /healthz``: database, pgvector, embedder, worker-cluster and replica status.

200 only when the database is usable; the other components are reported so an operator
can see a degraded service (search falls back to BM25 without an embedder, schedules do
not run without a cluster) without the load balancer pulling a working node.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from synthorg.db.replicas import replica_aliases, replica_health
from synthorg.llm.standin import DEMO_STANDIN_NOTE, is_demo_standin

logger = logging.getLogger(__name__)

# The production requirement (README, "Production and scaling out").
MIN_POSTGRES = (15, 0)
MIN_PGVECTOR = (0, 8)


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def _check_database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('server_version'), current_user, "
                "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user), "
                "(SELECT extversion FROM pg_extension WHERE extname = 'vector')"
            )
            server_version, role, superuser, vector_version = cursor.fetchone()
    except Exception as exc:  # any failure means the database is not usable
        logger.warning("health: database check failed", exc_info=True)
        return {
            "database": {"ok": False, "error": str(exc).strip().splitlines()[0][:300]},
            "vector": {"ok": False, "error": "database unavailable"},
        }
    return versions_report(server_version, vector_version, role=role, superuser=bool(superuser))


def versions_report(
    server_version: str, vector_version: str | None, *, role: str, superuser: bool
) -> dict:
    """The database, pgvector, requirement and app-role checks.

    Below PostgreSQL 15 or pgvector 0.8 the service still answers but ``versions`` is not
    ok (status ``degraded``); a superuser app role is flagged the same way, because the
    append-only guarantees then do not hold against the app's own credentials.
    """
    postgres_ok = _version_tuple(server_version) >= MIN_POSTGRES
    vector_ok = vector_version is not None and _version_tuple(vector_version) >= MIN_PGVECTOR
    return {
        "database": {"ok": True},
        "vector": (
            {"ok": True, "version": vector_version}
            if vector_version is not None
            else {"ok": False, "error": "not installed"}
        ),
        "versions": {
            "ok": postgres_ok and vector_ok,
            "postgres": server_version,
            "pgvector": vector_version,
            "required": {"postgres": ">= 15", "pgvector": ">= 0.8"},
        },
        "app_role": {"ok": not superuser, "name": role, "superuser": superuser},
    }


def _check_embedder() -> dict:
    from synthorg.embedding import default_embedder

    try:
        embedder = default_embedder()
        return {
            "ok": embedder.is_ready(),
            "id": embedder.embedder_id,
            "loaded": embedder.is_ready(),
        }
    except Exception as exc:
        return {"ok": False, "error": str(exc)[:300]}


#: Checks that need a database-backed component (apps register them in ``AppConfig.ready``):
#: ``name -> check()``, each returning ``{"ok": bool, ...}``. They run only when the database
#: is usable; otherwise each reports ``database unavailable``.
_component_checks: dict[str, Callable[[], dict]] = {}


def register_health_check(name: str, check: Callable[[], dict]) -> None:
    """Add ``check`` to ``/healthz`` under ``name`` (idempotent: the last one registered wins)."""
    _component_checks[name] = check


NO_LLM = (
    "no LLM configured (SYNTHORG_LLM_BASE_URL): lessons are rule-based, conversations are "
    "remembered verbatim, dream is extractive, evolver drafts use the lessons' own text, and "
    "Search-and-Ask is off"
)


def llm_summary() -> dict:
    """Which LLM the server uses, without contacting it. ``/healthz`` is public: it names
    neither the endpoint nor the key. ``model: null`` means the first model the endpoint
    lists, looked up at first use. The demo's stand-in (``make demo``) is labelled as such:
    ``standin: true`` and a ``note`` saying it is not a real model."""
    from django.conf import settings

    conf = getattr(settings, "SYNTHORG_LLM", None) or {}
    base_url = (conf.get("BASE_URL") or "").strip()
    if not base_url:
        return {"ok": True, "configured": False, "note": NO_LLM}
    model = (conf.get("MODEL") or "").strip() or None
    if is_demo_standin(model):
        return {
            "ok": True,
            "configured": True,
            "model": model,
            "standin": True,
            "note": DEMO_STANDIN_NOTE,
        }
    return {"ok": True, "configured": True, "model": model}


def llm_banner() -> tuple[str, bool]:
    """The startup banner's LLM line (``manage.py serve``) and whether it is a warning: no
    LLM, or the demo's stand-in, which is never presented as a real model."""
    llm = llm_summary()
    if llm.get("standin"):
        return f"LLM: {llm['model']}, {llm['note']}.", True
    if llm["configured"]:
        model = llm["model"] or "the first model the endpoint lists"
        return f"LLM: {model} (SYNTHORG_LLM_BASE_URL)", False
    return f"LLM: none. {llm['note'][0].upper()}{llm['note'][1:]}.", True


@require_GET
def healthz(request):
    checks = _check_database()
    checks["embedder"] = _check_embedder()
    checks["llm"] = llm_summary()
    for name, check in _component_checks.items():
        checks[name] = (
            check() if checks["database"]["ok"] else {"ok": False, "error": "database unavailable"}
        )
    if replica_aliases():
        checks["replicas"] = replica_health()
    usable = checks["database"]["ok"] and checks["vector"]["ok"]
    all_ok = all(check["ok"] for check in checks.values())
    status = "ok" if all_ok else ("degraded" if usable else "unavailable")
    return JsonResponse({"status": status, "checks": checks}, status=200 if usable else 503)
