"""Factories for memory rows (the write path in tests is the store service; these are for
setting up state the service would refuse or that a test wants exactly)."""

import factory
from django.utils import timezone

from memory.core.models.memory import Memory
from tests.persistence.factories import AgentFactory


class MemoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Memory

    agent = factory.SubFactory(AgentFactory)
    company = factory.SelfAttribute("agent.company")
    namespace = "default"
    category = "semantic"
    content = factory.Sequence(lambda n: f"Fact number {n} about the deployment pipeline")
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.SelfAttribute("created_at")
    embedding_status = Memory.EmbeddingStatus.PENDING
