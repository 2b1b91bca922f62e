"""Web hygiene: transport settings from the environment, the Content-Security-Policy header,
and the refusal to serve the development SECRET_KEY beyond loopback."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
from django.test import Client

from synthorg import gunicorn_conf
from synthorg.secret_key_guard import bind_host, development_key_refusal
from tests.persistence.factories import MembershipFactory, UserFactory

ROOT = Path(__file__).resolve().parents[2]
TRANSPORT = [
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SECURE_SSL_REDIRECT",
    "SECURE_PROXY_SSL_HEADER",
    "AXES_FAILURE_LIMIT",
    "AXES_COOLOFF_TIME",
]


def settings_under(env: dict) -> dict:
    """The settings a fresh process builds from ``env`` (no database is touched)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SYNTHORG_", "DJANGO_"))}
    code = (
        "import json, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'synthorg.settings';"
        "from django.conf import settings;"
        f"print(json.dumps({{k: getattr(settings, k) for k in {TRANSPORT!r}}}, default=str))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, "DATABASE_URL": "postgresql://u@localhost/db", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_transport_defaults_suit_local_http():
    assert settings_under({}) == {
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_HSTS_SECONDS": 0,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False,
        "SECURE_SSL_REDIRECT": False,
        "SECURE_PROXY_SSL_HEADER": None,
        "AXES_FAILURE_LIMIT": 5,
        "AXES_COOLOFF_TIME": "0:15:00",
    }


def test_transport_settings_come_from_the_environment():
    assert settings_under(
        {
            "SYNTHORG_SECURE_COOKIES": "true",
            "SYNTHORG_HSTS_SECONDS": "31536000",
            "SYNTHORG_HSTS_INCLUDE_SUBDOMAINS": "true",
            "SYNTHORG_HSTS_PRELOAD": "true",
            "SYNTHORG_SSL_REDIRECT": "true",
            "SYNTHORG_TRUST_X_FORWARDED_PROTO": "true",
            "SYNTHORG_LOGIN_FAILURE_LIMIT": "3",
            "SYNTHORG_LOGIN_COOLOFF_MINUTES": "60",
        }
    ) == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "AXES_FAILURE_LIMIT": 3,
        "AXES_COOLOFF_TIME": "1:00:00",
    }


@pytest.mark.django_db
def test_secure_cookies_and_hsts_reach_the_response(settings):
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = settings.SECURE_HSTS_PRELOAD = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    UserFactory(username="olivia", password="pw-for-tests-123")
    client = Client()
    # Behind a TLS proxy: the forwarded scheme makes the request secure.
    page = client.get("/console/login", headers={"X-Forwarded-Proto": "https"})
    assert page.cookies["csrftoken"]["secure"] is True
    login = client.post(
        "/console/login",
        {"username": "olivia", "password": "pw-for-tests-123"},
        headers={"X-Forwarded-Proto": "https"},
    )
    assert login.status_code == 302
    assert login.cookies["sessionid"]["secure"] is True
    assert login.cookies["sessionid"]["httponly"] is True
    assert login["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"


CSP = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'self'",
}


def policy(response) -> dict:
    """The Content-Security-Policy header as {directive: sources} (its order is not fixed)."""
    header = response.headers.get("Content-Security-Policy", "")
    return dict(part.strip().split(" ", 1) for part in header.split(";") if part.strip())


@pytest.mark.django_db
def test_every_page_carries_the_content_security_policy(company):
    user = UserFactory(is_staff=True, is_superuser=True)
    MembershipFactory(company=company, user=user, role="admin")
    client = Client()
    for page in ["/", "/console/login", "/admin/login/"]:
        assert policy(client.get(page)) == CSP, page
    client.force_login(user)
    for page in ["/console/inbox/", "/console/memories/", "/dashboard/costs", "/admin/"]:
        response = client.get(page)
        assert response.status_code == 200, page
        assert policy(response) == CSP, page
    # Swagger UI: its start-up script is a same-origin file; only inline styles are added.
    docs = client.get("/api/docs/")
    assert policy(docs) == {**CSP, "style-src": "'self' 'unsafe-inline'"}
    html = docs.content.decode()
    assert '<script src="/api/docs/?script=' in html
    assert "<script>" not in html


# --- the development SECRET_KEY -----------------------------------------------------------


def test_the_development_key_is_refused_beyond_loopback(settings):
    settings.DEBUG = False
    settings.SECRET_KEY = settings.DEVELOPMENT_SECRET_KEY
    for hosts in (["127.0.0.1"], ["localhost"], ["::1"], ["127.0.0.2", "[::1]"]):
        assert development_key_refusal(hosts) is None, hosts
    for hosts in (["0.0.0.0"], [""], ["::"], ["192.0.2.7"], ["example.org"], [None]):
        refusal = development_key_refusal(hosts)
        assert refusal is not None and "set DJANGO_SECRET_KEY" in refusal, hosts
    assert development_key_refusal(["127.0.0.1", "0.0.0.0"]) is not None
    settings.DEBUG = True
    assert development_key_refusal(["0.0.0.0"]) is None
    settings.DEBUG = False
    settings.SECRET_KEY = "a-real-production-key-" + "x" * 40
    assert development_key_refusal(["0.0.0.0"]) is None


def test_gunicorn_binds_are_read_as_hosts():
    assert [
        bind_host(b) for b in ("127.0.0.1:8000", "0.0.0.0:80", "[::1]:8000", "localhost", "::1")
    ] == ["127.0.0.1", "0.0.0.0", "::1", "localhost", "::1"]
    assert bind_host("unix:/run/synthorg.sock") is None
    assert bind_host("fd://3") is None


def test_a_gunicorn_worker_on_a_public_bind_refuses_to_boot(settings):
    settings.DEBUG = False
    settings.SECRET_KEY = settings.DEVELOPMENT_SECRET_KEY
    logged = []
    worker = SimpleNamespace(
        cfg=SimpleNamespace(bind=["0.0.0.0:8000"]), log=SimpleNamespace(error=logged.append)
    )
    with pytest.raises(SystemExit) as exited:
        gunicorn_conf.post_worker_init(worker)
    assert exited.value.code == gunicorn_conf.WORKER_BOOT_ERROR == 3
    assert "set DJANGO_SECRET_KEY" in logged[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_on_all_interfaces_with_the_development_key_refuses_to_start():
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "DJANGO_DEBUG")}
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--host", "0.0.0.0", "--port", str(_free_port())],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = serve.communicate(timeout=120)
    finally:
        if serve.poll() is None:  # the old behaviour: it served; stop it and its children
            children = psutil.Process(serve.pid).children(recursive=True)
            for proc in [*children, psutil.Process(serve.pid)]:
                with contextlib.suppress(psutil.NoSuchProcess):
                    proc.kill()
            psutil.wait_procs(children, timeout=10)
            serve.wait()
    assert serve.returncode == 1, out + err
    assert "Refusing to serve on 0.0.0.0 with the development SECRET_KEY" in err
    assert "set DJANGO_SECRET_KEY" in err
    assert "Serving on" not in out
