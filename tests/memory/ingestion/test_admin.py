"""Operators inspect conversations, runs, the journal and the dream diary in the admin;
read-only, and staff see only their own companies."""

import pytest
from django.contrib.auth import get_user_model

from memory.ingestion.models import ExtractionRun, JournalEntry
from memory.ingestion.services.extraction import conversation_extract
from tests.memory.ingestion.conftest import fact, flush, reply
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db

PAGES = ["conversation", "conversationmessage", "extractionrun", "journalentry", "dreamrun"]


@pytest.fixture
def extracted(caller, llm):
    conversation = flush(caller.agent, ["Ana said billing deploys move to Fridays."])
    reply(llm, {"facts": [fact("Billing deploys every Friday.")]})
    return conversation_extract(conversation=conversation, force=True)


def test_superuser_sees_every_page_read_only(client, extracted):
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-1234567")
    client.force_login(user)
    for page in PAGES:
        assert client.get(f"/admin/ingestion/{page}/").status_code == 200, page
        assert client.get(f"/admin/ingestion/{page}/add/").status_code == 403, page
    run = client.get(f"/admin/ingestion/extractionrun/{extracted.pk}/change/")
    assert run.status_code == 200
    assert "Billing deploys every Friday." in run.content.decode()
    entry = JournalEntry.objects.get()
    page = client.get(f"/admin/ingestion/journalentry/{entry.pk}/change/").content.decode()
    assert "journal of" in page and "learned (semantic, 0.90)" in page
    assert client.post(f"/admin/ingestion/extractionrun/{extracted.pk}/delete/").status_code == 403
    assert ExtractionRun.objects.filter(pk=extracted.pk).exists()


def test_staff_see_only_their_companies(client, extracted, caller, outsider):
    membership = MembershipFactory(company=outsider.company, role="admin")
    membership.user.is_staff = True
    membership.user.save()
    from django.contrib.auth.models import Permission

    membership.user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="ingestion", codename__startswith="view")
    )
    client.force_login(membership.user)
    listing = client.get("/admin/ingestion/extractionrun/")
    assert listing.status_code == 200
    assert "0 extraction runs" in listing.content.decode()
    assert caller.agent.name not in listing.content.decode()
    assert client.get(f"/admin/ingestion/extractionrun/{extracted.pk}/change/").status_code in (
        302,
        404,
    )
