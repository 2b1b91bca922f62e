"""The problem+json exception handler."""

import pytest
from rest_framework import exceptions

from synthorg.api.errors import flatten_field_errors, problem_exception_handler
from synthorg.errors import ConflictError, NotSupportedError, UnprocessableError


def test_domain_error_maps_status_code_and_extra():
    response = problem_exception_handler(
        ConflictError("Fact changed.", code="version_conflict", extra={"current_version": 3}), {}
    )
    assert response.status_code == 409
    assert response["Content-Type"] == "application/problem+json"
    assert response.data == {
        "type": "https://synthorg.dev/problems/version_conflict",
        "title": "Conflict",
        "status": 409,
        "detail": "Fact changed.",
        "code": "version_conflict",
        "errors": [],
        "current_version": 3,
    }


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (UnprocessableError("x"), 422, "unprocessable"),
        (NotSupportedError("x"), 501, "not_supported"),
    ],
)
def test_domain_error_statuses(error, status, code):
    response = problem_exception_handler(error, {})
    assert (response.status_code, response.data["code"]) == (status, code)


def test_validation_error_flattens_nested_fields():
    exc = exceptions.ValidationError(
        {"content": ["This field may not be blank."], "items": [{}, {"tags": ["Bad tag."]}]}
    )
    response = problem_exception_handler(exc, {})
    assert response.status_code == 400
    assert response.data["code"] == "validation_error"
    assert response.data["errors"] == [
        {"field": "content", "message": "This field may not be blank.", "code": "invalid"},
        {"field": "items[1].tags", "message": "Bad tag.", "code": "invalid"},
    ]
    assert response.data["detail"] == "content: This field may not be blank. (and 1 more)"


def test_flatten_non_field_errors():
    assert flatten_field_errors({"non_field_errors": ["Nope."]}) == [
        {"field": None, "message": "Nope.", "code": "invalid"}
    ]


def test_unknown_exception_is_left_to_django():
    assert problem_exception_handler(RuntimeError("bug"), {}) is None
