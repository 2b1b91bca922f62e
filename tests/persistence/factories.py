import datetime as _dt
from decimal import Decimal

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from persistence.models import (
    Agent,
    Artifact,
    Company,
    CompanyMembership,
    CostRecord,
    Message,
    ParkedContext,
    Project,
    Task,
)


class CompanyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Company

    name = factory.Sequence(lambda n: f"Company {n}")
    slug = factory.Sequence(lambda n: f"company-{n}")
    config = factory.LazyFunction(dict)


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent

    company = factory.SubFactory(CompanyFactory)
    name = factory.Sequence(lambda n: f"agent-{n}")
    role = "engineer"
    department = "engineering"
    seniority = "mid"
    autonomy_level = "semi"
    memory_level = "persistent"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", "pw-for-tests-123")

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CompanyMembership

    user = factory.SubFactory(UserFactory)
    company = factory.SubFactory(CompanyFactory)
    role = "operator"


# Operational data -----------------------------------------------------------------------


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    company = factory.SubFactory(CompanyFactory)
    name = factory.Sequence(lambda n: f"project-{n}")


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task

    company = factory.SubFactory(CompanyFactory)
    title = factory.Sequence(lambda n: f"task {n}")
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyAttribute(lambda o: o.created_at)


class CostRecordFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CostRecord

    company = factory.SubFactory(CompanyFactory)
    provider = "openai"
    model = "gpt-4o-mini"
    input_tokens = 100
    output_tokens = 50
    cost = Decimal("0.0100000000")
    currency = "USD"
    occurred_at = factory.LazyFunction(timezone.now)
    created_at = factory.LazyFunction(timezone.now)


class MessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Message

    company = factory.SubFactory(CompanyFactory)
    channel = "general"
    content = factory.Sequence(lambda n: f"message {n}")
    created_at = factory.LazyFunction(timezone.now)


class ParkedContextFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ParkedContext

    company = factory.SubFactory(CompanyFactory)
    execution_id = factory.Sequence(lambda n: f"exec-{n}")
    created_at = factory.LazyFunction(timezone.now)


class ArtifactFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Artifact

    company = factory.SubFactory(CompanyFactory)
    artifact_type = "document"
    name = factory.Sequence(lambda n: f"artifact {n}")
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyAttribute(lambda o: o.created_at)


def at(day: int, hour: int = 12, month: int = 3, year: int = 2026) -> _dt.datetime:
    """A fixed UTC instant (tests never depend on the wall clock)."""
    return _dt.datetime(year, month, day, hour, tzinfo=_dt.UTC)
