"""Extraction sends memory events like any write: one ``memory.created`` per memory it
forms, to the company's webhook (against a real local receiver and the local LLM server)."""

import json

import pytest

from memory.core.models.memory import Memory
from memory.ingestion.services.extraction import conversation_extract
from orgmemory.models import WebhookDelivery
from orgmemory.services.webhooks import SIGNATURE_HEADER, webhook_configure, webhook_deliver
from tests.memory.ingestion.conftest import fact, flush, reply
from tests.support.webhook_receiver import Receiver, signature_of

pytestmark = pytest.mark.django_db

SECRET = "whsec-extraction"


def test_each_extracted_memory_is_one_created_event(caller, llm):
    receiver = Receiver()
    try:
        webhook_configure(
            company=caller.company,
            url=receiver.url,
            secret=SECRET,
            events=["memory.created"],
            principal=None,
        )
        conversation = flush(caller.agent, ["Ana said billing deploys on Fridays.", "Noted."])
        reply(
            llm,
            {
                "facts": [
                    fact("Billing deploys every Friday."),
                    fact("Ana leads the billing team.", category="social"),
                ]
            },
        )
        assert conversation_extract(conversation=conversation, force=True).status == "succeeded"
        for delivery in WebhookDelivery.objects.all():
            webhook_deliver(delivery_id=delivery.pk)
        payloads = []
        for headers, body in receiver.requests:
            assert headers[SIGNATURE_HEADER] == signature_of(SECRET, body)
            payloads.append(json.loads(body))
        ids = sorted(str(pk) for pk in Memory.objects.values_list("pk", flat=True))
        assert len(ids) == 2
        assert sorted(p["memory"]["id"] for p in payloads) == ids
        assert {p["event"] for p in payloads} == {"memory.created"}
        assert all("content" not in p["memory"] for p in payloads)
    finally:
        receiver.close()
