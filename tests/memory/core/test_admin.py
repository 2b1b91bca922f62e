"""Humans inspect memories in the admin; it never writes."""

import pytest
from django.contrib.auth import get_user_model

from tests.memory.factories import MemoryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-123456789")
    client.force_login(user)
    return client


def test_admin_lists_and_shows_memories(admin_client):
    memory = MemoryFactory(content="Visible to operators in the admin.", tags=["ops"])
    listing = admin_client.get("/admin/memory/memory/", {"q": "operators"})
    assert listing.status_code == 200
    assert "Visible to operators in the admin." in listing.content.decode()
    detail = admin_client.get(f"/admin/memory/memory/{memory.pk}/change/")
    assert detail.status_code == 200
    assert admin_client.get("/admin/memory/memory/add/").status_code == 403
    assert admin_client.post(f"/admin/memory/memory/{memory.pk}/delete/").status_code == 403
    memory.refresh_from_db()
