import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_schema_generates_without_warnings(capsys):
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    assert "openapi: 3.0.3" in out.getvalue()
    assert "/api/v1/me" in out.getvalue()


@pytest.mark.django_db
def test_migrations_are_complete():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


@pytest.mark.django_db
def test_swagger_ui_is_served_offline(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower()


@pytest.mark.django_db
def test_docs_and_schema_open_for_a_person_in_several_companies(client):
    """They are not company data: no X-Company needed (it was a 403)."""
    from tests.persistence.factories import MembershipFactory

    first = MembershipFactory(role="viewer")
    MembershipFactory(user=first.user, role="admin")
    client.force_login(first.user)
    for url in ("/api/docs/", "/api/schema/"):
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:200])
    assert b"/api/v1/me" in client.get("/api/schema/").content
