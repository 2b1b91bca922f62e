import factory
from django.contrib.auth import get_user_model

from persistence.models import Agent, Company, CompanyMembership


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
