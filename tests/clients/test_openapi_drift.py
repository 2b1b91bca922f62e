"""The Python client cannot drift from the API: every endpoint it calls, every parameter and
body member it may send, and every field of every result model (nested ones included) are
checked against the OpenAPI schema the server serves (drf-spectacular, generated in-process)."""

import ast
import typing
from pathlib import Path

import pytest
from drf_spectacular.generators import SchemaGenerator
from pydantic import BaseModel

from synthorg_memory import models
from synthorg_memory._transport import API_PREFIX, Call
from synthorg_memory.resources import ENDPOINTS

CLIENT_SOURCE = Path(__file__).resolve().parents[2] / "clients" / "python" / "src"


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def resolve(schema, node):
    """``node`` with ``$ref`` and a single ``allOf`` followed."""
    while True:
        if "$ref" in node:
            node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
        elif len(node.get("allOf", ())) == 1:
            node = node["allOf"][0]
        else:
            return node


def options(schema, node):
    """The object schemas a body may be (each option of a ``oneOf``)."""
    node = resolve(schema, node)
    return [resolve(schema, option) for option in node.get("oneOf", [node])]


def model_of(annotation):
    """The pydantic model in a field's annotation (``Memory``, ``list[Memory]``,
    ``Memory | None``), or ``None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in typing.get_args(annotation):
        found = model_of(argument)
        if found is not None:
            return found
    return None


def item_schema(schema, node):
    node = resolve(schema, node)
    return resolve(schema, node["items"]) if node.get("type") == "array" else node


def check_model(schema, model, node, where, problems):
    # a oneOf answer (one memory or a batch): the option the model describes
    node = max(
        options(schema, node),
        key=lambda option: len(set(option.get("properties", ())) & set(model.model_fields)),
    )
    properties = node.get("properties", {})
    required = set(node.get("required", ()))
    for name, field in model.model_fields.items():
        if name not in properties:
            problems.append(f"{where}: {model.__name__}.{name} is not in the schema")
            continue
        if field.is_required() and name not in required:
            problems.append(f"{where}: {model.__name__}.{name} is required, the API may omit it")
        nested = model_of(field.annotation)
        if nested is not None:
            check_model(
                schema, nested, item_schema(schema, properties[name]), f"{where}.{name}", problems
            )


def operation(schema, endpoint):
    path = schema["paths"].get(API_PREFIX + endpoint.path)
    assert path is not None, f"{endpoint.path} is not served"
    op = path.get(endpoint.method.lower())
    assert op is not None, f"{endpoint.method} {endpoint.path} is not served"
    return op


def success_schema(op):
    (status,) = [code for code in op["responses"] if code.startswith("2")][:1]
    content = op["responses"][status].get("content")
    return None if content is None else content["application/json"]["schema"]


def test_every_endpoint_the_client_calls_is_served_and_takes_what_it_sends(schema):
    problems = []
    for endpoint in ENDPOINTS:
        op = operation(schema, endpoint)
        where = f"{endpoint.method} {endpoint.path}"
        query = {p["name"] for p in op.get("parameters", ()) if p["in"] == "query"}
        problems += [f"{where}: query {name}" for name in endpoint.query if name not in query]
        if endpoint.body:
            body = op["requestBody"]["content"]["application/json"]["schema"]
            members = {name for option in options(schema, body) for name in option["properties"]}
            problems += [f"{where}: body {name}" for name in endpoint.body if name not in members]
        elif "requestBody" in op:
            problems.append(f"{where}: the API takes a body the client never sends")
    assert problems == []


def test_every_result_model_matches_its_response_schema(schema):
    problems = []
    for endpoint in ENDPOINTS:
        response = success_schema(operation(schema, endpoint))
        where = f"{endpoint.method} {endpoint.path}"
        if endpoint.response is None:
            assert response is None, f"{where} answers a body the client drops"
            continue
        node = resolve(schema, response)
        if endpoint.shape == "page":
            assert {"next", "results"} <= set(node["properties"]), where
            node = node["properties"]["results"]["items"]
        elif endpoint.shape == "array":
            assert node["type"] == "array", where
            node = node["items"]
        check_model(schema, endpoint.response, node, where, problems)
    assert problems == []


def test_the_stored_memory_is_a_memory_plus_what_the_store_said(schema):
    schemas = schema["components"]["schemas"]
    memory, result = set(schemas["Memory"]["properties"]), set(schemas["StoreResult"]["properties"])
    assert set(models.StoredMemory.model_fields) <= memory | result
    assert set(models.StoredMemory.model_fields) - memory == {"stored", "deduplicated", "warnings"}


def test_every_model_is_checked_through_an_endpoint():
    reached = set()

    def walk(model):
        if model in reached:
            return
        reached.add(model)
        for field in model.model_fields.values():
            nested = model_of(field.annotation)
            if nested is not None:
                walk(nested)

    for endpoint in ENDPOINTS:
        if endpoint.response is not None:
            walk(endpoint.response)
    defined = {
        value
        for value in vars(models).values()
        if isinstance(value, type) and issubclass(value, models.Model) and value is not models.Model
    }
    assert defined - reached == {models.StoredMemory}  # checked against Memory + StoreResult


def test_a_call_refuses_a_member_its_endpoint_does_not_declare():
    (search,) = [e for e in ENDPOINTS if e.path == "/memories/search"]
    with pytest.raises(TypeError, match=r"does not take \['user_id'\]"):
        Call(search, body={"query": "x", "user_id": "user-42"})


def test_the_client_imports_nothing_of_the_product():
    product = {"synthorg", "persistence", "memory", "orgmemory", "django", "rest_framework"}
    for path in CLIENT_SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            assert not {name.split(".")[0] for name in names} & product, (path, names)
