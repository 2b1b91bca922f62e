"""Django settings for SynthOrg Memory.

Everything deployment-specific comes from the environment (see README "Configuration").
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from synthorg.client_ip import parse_trusted_proxies
from synthorg.database import (
    database_owner_settings,
    database_settings,
    replica_database_settings,
)
from synthorg.tenancy import parse_secret_grants

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEBUG = _env_bool("DJANGO_DEBUG", False)
# A fixed development key keeps `make run` zero-config; production must set its own: `serve`
# refuses this key on a non-loopback bind unless DEBUG (synthorg.secret_key_guard).
DEVELOPMENT_SECRET_KEY = "dev-insecure-synthorg-memory-key-set-DJANGO_SECRET_KEY-in-production"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or DEVELOPMENT_SECRET_KEY
ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
    if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "axes",  # login throttling (web hygiene block below)
    "django_jsonform",  # the company config form's widget (persistence/console/config_form.py)
    "synthorg",
    "synthorg.jobs",
    "persistence",
    "orgmemory",
    "memory.core",
    "memory.procedural",
    "memory.ingestion",
    "memory.procedural.evolver",
    "memory.interfaces",
    "memory.finetune",  # a leaf: nothing imports it (.importlinter)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",  # Content-Security-Policy (web hygiene block below)
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # problem+json for every error under /api/, including 404/405/413/500 (synthorg.api)
    "synthorg.api.middleware.ApiProblemMiddleware",
    # a database that cannot be reached answers 503 + Retry-After, not 500 (synthorg.db)
    "synthorg.db.unavailable.DatabaseUnavailableMiddleware",
    # bookkeeping rows (request log, policy deliveries) written after the response is sent
    "synthorg.after_response.AfterResponseMiddleware",
    # a request that wrote keeps its principal's reads off lagging replicas (synthorg.db)
    "synthorg.db.replicas.ReadYourWritesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a lockout into the lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "synthorg.urls"
WSGI_APPLICATION = "synthorg.wsgi.application"
ASGI_APPLICATION = "synthorg.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": database_settings(BASE_DIR)}
# Streaming replicas for the read paths that may lag (synthorg.db.replicas; docs/operating/
# production.md "Read replicas"): one alias per URL in DATABASE_REPLICA_URLS.
DATABASES.update(
    replica_database_settings(
        os.environ.get("DATABASE_REPLICA_URLS", ""),
        DATABASES["default"]["CONN_MAX_AGE"],
    )
)
DATABASE_ROUTERS = ["synthorg.db.replicas.ReplicaRouter"]
# DATABASE_REPLICA_READ_YOUR_WRITES_SECONDS, _MAX_LAG_SECONDS, _RECHECK_SECONDS.
SYNTHORG_REPLICAS = {
    name: float(os.environ.get(f"DATABASE_REPLICA_{name}", default))
    for name, default in (
        ("READ_YOUR_WRITES_SECONDS", "5"),
        ("MAX_LAG_SECONDS", "10"),
        ("RECHECK_SECONDS", "5"),
    )
}
# Login fields of the role that owns the schema: migrate/flush switch to it (synthorg.db.roles).
DATABASE_OWNER = database_owner_settings(BASE_DIR)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "var" / "staticfiles"
# WhiteNoise warns when the directory is missing (before the first collectstatic).
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

LOGIN_URL = "admin:login"

# --- Web hygiene (issue 22, item 9) -------------------------------------------------------------
# Transport: off by default so `make run` works over plain http on 127.0.0.1; behind TLS set
# SYNTHORG_SECURE_COOKIES=true and SYNTHORG_HSTS_SECONDS=31536000 (docs/operating/security.md).
SESSION_COOKIE_SECURE = _env_bool("SYNTHORG_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
SECURE_HSTS_SECONDS = int(os.environ.get("SYNTHORG_HSTS_SECONDS", "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_bool("SYNTHORG_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = _env_bool("SYNTHORG_HSTS_PRELOAD", False)
SECURE_SSL_REDIRECT = _env_bool("SYNTHORG_SSL_REDIRECT", False)
# Trust X-Forwarded-Proto only when a TLS-terminating proxy that sets it is in front (opt-in).
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https")
    if _env_bool("SYNTHORG_TRUST_X_FORWARDED_PROTO", False)
    else None
)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# Content-Security-Policy (django-csp): same-origin scripts and styles only, no inline code.
# The console and admin pass it; /api/docs/ (Swagger UI) adds inline styles only
# (synthorg/urls.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'self'"],
    }
}

# Login throttling (django-axes) for /admin/login/ and /console/login: after
# SYNTHORG_LOGIN_FAILURE_LIMIT wrong passwords for one username from one IP, that pair is
# locked out for SYNTHORG_LOGIN_COOLOFF_MINUTES (a correct password is refused meanwhile).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("SYNTHORG_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("SYNTHORG_LOGIN_COOLOFF_MINUTES", "15")))
# The client address is REMOTE_ADDR, or behind the reverse proxies named in
# SYNTHORG_TRUSTED_PROXIES (IPs / networks, comma-separated) the address they forwarded
# (X-Forwarded-For read from the right; synthorg/client_ip.py). Unset: the header is ignored.
try:
    SYNTHORG_TRUSTED_PROXY_NETWORKS = parse_trusted_proxies(
        os.environ.get("SYNTHORG_TRUSTED_PROXIES", "")
    )
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
AXES_CLIENT_IP_CALLABLE = "synthorg.client_ip.client_ip"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
# --- end of web hygiene -------------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "persistence.api.authentication.AgentKeyAuthentication",
        "persistence.api.authentication.HumanSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["persistence.api.permissions.IsPrincipal"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["synthorg.api.parsers.SafeJSONParser"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "synthorg.api.pagination.StablePageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "synthorg.api.errors.problem_exception_handler",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "SynthOrg Memory API",
    "DESCRIPTION": "Durable, searchable memory for fleets of AI agents.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its docs page are public (AllowAny) and need no principal: without this
    # a signed-in person with several memberships and no X-Company got 403 from them.
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "synthorg.api.schema.forbid_unknown_request_fields",
    ],
    "ENUM_NAME_OVERRIDES": {
        "MemoryCategoryEnum": "synthorg.enums.MEMORY_CATEGORY_CHOICES",
        "OrgFactCategoryEnum": "synthorg.enums.ORG_FACT_CATEGORY_CHOICES",
        "ExtractionRunStatusEnum": "memory.ingestion.models.ExtractionRun.Status",
        "DreamRunStatusEnum": "memory.ingestion.models.DreamRun.Status",
        "ExtractionRunMethodEnum": "memory.ingestion.models.ExtractionRun.Method",
        "DreamRunMethodEnum": "memory.ingestion.models.DreamRun.Method",
        "CaptureMethodEnum": "memory.procedural.models.CAPTURE_METHOD_CHOICES",
    },
}

# Company-configured (remote) embedders: seconds per attempt, total seconds per call (well
# under gunicorn's 30 s worker timeout), and seconds to skip an endpoint after it timed out.
SYNTHORG_EMBEDDER_TIMEOUT = float(os.environ.get("SYNTHORG_EMBEDDER_TIMEOUT", "5"))
SYNTHORG_EMBEDDER_BUDGET = float(os.environ.get("SYNTHORG_EMBEDDER_BUDGET", "8"))
SYNTHORG_EMBEDDER_COOLDOWN = float(os.environ.get("SYNTHORG_EMBEDDER_COOLDOWN", "30"))

# Outbound requests to tenant-configured URLs (webhooks, company embedders) may not reach
# loopback, private, link-local, CGNAT or metadata addresses unless listed here: host names
# and IP ranges, comma-separated ("10.0.0.0/8,embedder.internal"). See synthorg.outbound.
SYNTHORG_OUTBOUND_ALLOW = os.environ.get("SYNTHORG_OUTBOUND_ALLOW", "")

# Which company may use which SYNTHORG_SECRET_* variable as its embedder key, by company id
# (never slug: a slug can be renamed and taken by another company):
# "SYNTHORG_SECRET_ACME_EMBED=3,SYNTHORG_SECRET_X=3|7". An ungranted name is refused when the
# config is written and when the key would be read.
SYNTHORG_SECRET_GRANTS = os.environ.get("SYNTHORG_SECRET_GRANTS", "")
try:  # refused at start, not at the first config write (a grant naming a slug, as before)
    parse_secret_grants(SYNTHORG_SECRET_GRANTS)
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None

# Files the server writes for a company (e.g. SKILL.md) live under <this>/<company id>/;
# path fields of the company config are names relative to that directory.
SYNTHORG_TENANT_FILES_DIR = Path(
    os.environ.get("SYNTHORG_TENANT_FILES_DIR") or BASE_DIR / "var" / "tenant-files"
)

Q_CLUSTER = {
    "name": "synthorg",
    "orm": "default",
    "workers": int(os.environ.get("Q_WORKERS", "2")),
    "timeout": int(os.environ.get("Q_TIMEOUT", "600")),
    "retry": int(os.environ.get("Q_RETRY", "900")),
    "max_attempts": 3,
    "catch_up": False,
    "save_limit": 1000,
    "sync": _env_bool("Q_SYNC", False),
    "label": "Background tasks",
    # LLM work runs on its own cluster and queue (synthorg.schedules.LLM_CLUSTER), started
    # with Q_CLUSTER_NAME=llm: a hanging LLM endpoint cannot hold the default cluster's
    # workers (webhooks, maintenance, re-embedding).
    "ALT_CLUSTERS": {
        "llm": {
            "workers": int(os.environ.get("Q_LLM_WORKERS", "2")),
            "timeout": int(os.environ.get("Q_LLM_TIMEOUT", "600")),
            "retry": int(os.environ.get("Q_LLM_RETRY", "900")),
            "label": "LLM tasks",
        }
    },
}

# The embedding model used when a company has no `memory.embedder` override.
SYNTHORG_DEFAULT_EMBEDDER = os.environ.get("SYNTHORG_DEFAULT_EMBEDDER", "minilm-onnx")

# OpenAI-compatible chat completions (LLM-dependent steps degrade when unset).
SYNTHORG_LLM = {
    "BASE_URL": os.environ.get("SYNTHORG_LLM_BASE_URL", ""),
    "API_KEY": os.environ.get("SYNTHORG_LLM_API_KEY", ""),
    "MODEL": os.environ.get("SYNTHORG_LLM_MODEL", ""),
    "TIMEOUT": float(os.environ.get("SYNTHORG_LLM_TIMEOUT", "30")),
    # One completion as a whole (attempts, trickling reads, back-off), in seconds.
    "TOTAL_TIMEOUT": float(os.environ.get("SYNTHORG_LLM_TOTAL_TIMEOUT", "120")),
    "MAX_RETRIES": int(os.environ.get("SYNTHORG_LLM_MAX_RETRIES", "2")),
    # Seconds all LLM calls inside one HTTP request (Search-and-Ask) may take together;
    # past it the request answers with its plain search results (degraded).
    "REQUEST_BUDGET": float(os.environ.get("SYNTHORG_LLM_REQUEST_BUDGET", "15")),
    # USD per million tokens, used to price the cost record of every call (0 when unset).
    "INPUT_COST_PER_MTOK": os.environ.get("SYNTHORG_LLM_INPUT_COST_PER_MTOK", "0"),
    "OUTPUT_COST_PER_MTOK": os.environ.get("SYNTHORG_LLM_OUTPUT_COST_PER_MTOK", "0"),
}

# LLM tasks one company may run at once on the LLM cluster (PostgreSQL advisory-lock slots,
# synthorg/llm/slots.py): a company whose model hangs holds at most this many LLM workers;
# its further LLM work is deferred, not queued behind. Keep Q_LLM_WORKERS above it.
SYNTHORG_LLM_COMPANY_CONCURRENCY = int(os.environ.get("SYNTHORG_LLM_COMPANY_CONCURRENCY", "1"))
if not 1 <= SYNTHORG_LLM_COMPANY_CONCURRENCY <= 255:
    raise ImproperlyConfigured("SYNTHORG_LLM_COMPANY_CONCURRENCY must be between 1 and 255")

# Org facts are also embedded (for relevance ranking next to BM25) unless this is false.
ORGMEMORY_EMBEDDINGS = _env_bool("SYNTHORG_ORGMEMORY_EMBEDDINGS", True)

# Agent API keys: how often `last_used_at` is written (seconds), to avoid a write per request.
SYNTHORG_KEY_LAST_USED_RESOLUTION = 60

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django_q": {"level": os.environ.get("Q_LOG_LEVEL", "INFO")},
    },
}
