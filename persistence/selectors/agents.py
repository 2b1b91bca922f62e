from django.db.models import QuerySet

from persistence.models import Agent, Company


def agents_for_company(company: Company) -> QuerySet[Agent]:
    return Agent.objects.filter(company=company).order_by("name", "id")
