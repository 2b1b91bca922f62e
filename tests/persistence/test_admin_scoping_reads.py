"""Admin tenancy, read-only: every scoped admin's changelist and object pages, as the staff
of one company, show its own objects and none of another company's.

The two companies (:func:`tests.persistence.test_admin_scoping._build`, about 30 objects
each) are built once for this module's tests — in a transaction rolled back when they are
done, each test's own transaction a savepoint inside it — since nothing here writes. The
writing tests build their own in ``test_admin_scoping.py``.
"""

from __future__ import annotations

import pytest
from django.db import transaction

from tests.persistence.test_admin_scoping import SCOPED_MODELS, _build, _url


@pytest.fixture(scope="module")
def read_worlds(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), transaction.atomic():
        yield _build("a"), _build("b")
        transaction.set_rollback(True)


@pytest.mark.parametrize("model", SCOPED_MODELS, ids=lambda m: m.__name__)
def test_changelist_shows_only_own_company(db, read_worlds, model):
    a, b = read_worlds
    html = a.client.get(_url(model)).content.decode()
    assert _url(model, a.objects[model]) in html
    assert _url(model, b.objects[model]) not in html


@pytest.mark.parametrize("model", SCOPED_MODELS, ids=lambda m: m.__name__)
def test_other_company_object_pages_are_not_found(db, read_worlds, model):
    a, b = read_worlds
    assert a.client.get(_url(model, a.objects[model])).status_code == 200
    response = a.client.get(_url(model, b.objects[model]))
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "doesn't exist"
    assert a.client.get(_url(model, b.objects[model], "history")).status_code == 302
