"""A randomized cross-tenant probe of every API endpoint that takes an id.

Endpoints come from the OpenAPI schema and rows from the model registry, so an endpoint or
a company-scoped model added later is probed without touching this file:

* **another company**: one row of every model with a ``company`` foreign key is created in
  a victim company, every text of it carrying a marker; every id-taking operation
  (every method) is called, as an agent and as a human of the prober's company, with ids
  sampled (fixed seed) from those rows, matched to path parameters by type and name;
* **another agent** of the same company: its private rows (memories, archived memories,
  org write requests, audit entries) are probed the same way by an agent.

No response may contain a victim's marker (an echo of the probed path parameter itself
aside), no victim row may change, and a read by a victim's UUID is a 403/404 (an integer id
may also name one of the prober's own rows, so there the marker check decides).
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections import defaultdict
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.apps import apps
from django.contrib.postgres.fields import ArrayField
from django.db import IntegrityError, models, transaction
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from memory.ingestion.models import Conversation, DreamRun, ExtractionRun, JournalEntry
from memory.procedural.evolver.models import DraftFailure
from memory.procedural.models import ExecutionReport
from orgmemory.models import OrgFact, WriteAccessRequest
from persistence.models import AuditEntry
from tests.conftest import make_agent_caller
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db

VICTIM = "zqvictimzq"
PEER = "zqpeerzq"
SAMPLES_PER_PARAMETER = 6
PEER_PRIVATE = {
    Memory: {"agent": "peer", "is_shared": False},
    ArchivedMemory: {"agent": "peer"},
    WriteAccessRequest: {"requester": "peer"},
    AuditEntry: {"actor_agent": "peer"},
    Conversation: {"agent": "peer"},
    ExtractionRun: {"agent": "peer"},
    JournalEntry: {"agent": "peer"},
    DreamRun: {"agent": "peer"},
}


def project_models():
    from django.conf import settings

    base = str(settings.BASE_DIR)
    for config in apps.get_app_configs():
        if config.path.startswith(base) and "/.venv/" not in config.path:
            yield from config.get_models()


def company_scoped_models():
    return [
        model
        for model in project_models()
        if any(
            isinstance(f, models.ForeignKey) and f.name == "company"
            for f in model._meta.concrete_fields
        )
    ]


class Seeder:
    """Creates one row per model, filling required fields generically (marker in texts)."""

    def __init__(self, company, marker, agent, second):
        self.company, self.marker, self.agent, self.second = company, marker, agent, second
        self.made: dict[type[models.Model], models.Model] = {
            type(agent): agent,
            type(company): company,
        }
        self.skipped: dict[str, str] = {}

    def row(self, model, **fixed):
        if model in self.made and not fixed:
            return self.made[model]
        fixed = {**SEED_HINTS.get(model.__name__, {}), **fixed}
        values = {}
        for field in model._meta.concrete_fields:
            if field.primary_key and field.name in fixed:
                value = fixed[field.name]  # a one-to-one primary key names its row
                values[field.name] = value(self) if callable(value) else value
            if field.primary_key or field.name in values:
                continue
            if field.name in fixed:
                value = fixed[field.name]
                values[field.name] = value(self) if callable(value) else value
                continue
            value = self.value(model, field)
            if value is not _SKIP:
                values[field.name] = value
        try:
            with transaction.atomic():
                obj = model.objects.create(**values)
        except (IntegrityError, ValueError, TypeError) as exc:
            self.skipped[model.__name__] = str(exc)[:200]
            return None
        self.made.setdefault(model, obj)
        return obj

    def value(self, model, field):
        if field.name == "company":
            return self.company
        if isinstance(field, models.ForeignKey | models.OneToOneField):
            return self._related(model, field)
        if field.has_default():
            return _SKIP
        if field.choices:
            return field.choices[0][0]
        return self._made_up(field)

    def _related(self, model, field):
        """A row of the field's model: one made already, else a new one (nullable: none)."""
        target = field.related_model
        if field.null and target not in self.made:
            return _SKIP
        if isinstance(field, models.OneToOneField) and target in self.made:
            if target.__name__ in {"Agent"} and model.__name__ == "AgentRuntimeState":
                return self.made[target]
            if field.null:
                return _SKIP
        return self.made.get(target) or self.row(target)

    def _made_up(self, field):
        """A value of the field's type carrying the seeder's marker where it can."""
        if isinstance(field, ArrayField):
            return [f"{self.marker}-{field.name}"[: field.base_field.max_length or 64]]
        if isinstance(field, models.JSONField):
            return {"m": f"{self.marker}-{field.name}"}
        if isinstance(field, models.CharField | models.TextField):
            return f"{self.marker}-{field.name}"[: field.max_length or 200]
        if field.null:
            return _SKIP
        for kind, make in _SCALARS:
            if isinstance(field, kind):
                return make()
        return _SKIP


_SKIP = object()
# A value for a NOT NULL field of each type (the first type the field is an instance of).
_SCALARS = (
    (models.UUIDField, uuid.uuid4),
    (models.DateTimeField, lambda: datetime(2026, 3, 1, tzinfo=UTC)),
    (models.BooleanField, lambda: True),
    (models.DecimalField, lambda: Decimal("1")),
    (models.FloatField, lambda: 0.5),
    (models.IntegerField, lambda: 1),
)

# Check constraints a generic row cannot guess (one actor, a distinct peer, …).
SEED_HINTS = {
    "AuditEntry": {"actor_agent": lambda seeder: seeder.agent, "actor_user": None},
    "Message": {"sender_agent": lambda seeder: seeder.agent, "sender_user": None},
    "CollaborationMetric": {"agent": lambda seeder: seeder.agent, "peer": lambda s: s.second},
    "ArchivedMemory": {"category": "semantic"},
    # a chunk row holds a vector (NOT NULL: a chunk exists only as a vector)
    "MemoryChunk": {"embedding": [0.5] * 384},
    # a pending item: no decision fields, a TTL within 60 s – 7 days
    "ApprovalItem": {
        "decided_by": None,
        "created_at": datetime(2026, 3, 1, tzinfo=UTC),
        "expires_at": datetime(2026, 3, 2, tzinfo=UTC),
    },
    "ApprovalWebhook": {"url": lambda seeder: f"https://example.com/{seeder.marker}"},
    # a core-policy delivery names the block by its SHA-256 (64 lowercase hex characters)
    "PolicyDelivery": {"revision": "0" * 64},
    # one-to-one primary keys: the report / memory they describe
    "ExecutionCapture": {"report": lambda seeder: seeder.row(ExecutionReport)},
    # the end user a report's task served (kept beside the append-only report)
    "ExecutionReportSubject": {
        "report": lambda seeder: seeder.row(ExecutionReport),
        "subject": lambda seeder: f"{seeder.marker}-subject",
    },
    "ProceduralLesson": {"memory": lambda seeder: seeder.row(Memory), "origin": "failure"},
    # an approved org skill (the evolver's) is stored beside its procedure fact, under its id
    "OrgSkill": {
        "id": lambda seeder: seeder.made[OrgFact].pk,
        "source": "evolver",
        "fact": lambda seeder: seeder.made[OrgFact],
    },
    "JournalEntry": {"day": date(2026, 3, 1)},
    # a pending draft failure is due for a retry; its history row names it
    "DraftFailure": {"next_attempt_at": datetime(2026, 3, 1, tzinfo=UTC)},
    "DraftStatusChange": {"draft": lambda seeder: seeder.row(DraftFailure)},
    # a planned run has a heartbeat (the automatic resume reads it)
    "FineTuneRun": {"heartbeat_at": datetime(2026, 3, 1, tzinfo=UTC)},
    # a checkpoint names its file by digest (64 lowercase hex characters)
    "AdapterCheckpoint": {
        "sha256": lambda seeder: hashlib.sha256(seeder.marker.encode()).hexdigest()
    },
}


def _identifiers(rows):
    """Every pk, UUID and text value of ``rows``, by kind, with the model it came from."""
    ints, uuids, texts = defaultdict(set), defaultdict(set), defaultdict(set)
    for obj in rows:
        for field in obj._meta.concrete_fields:
            value = getattr(obj, field.attname)
            if value is None:
                continue
            source = f"{type(obj).__name__}.{field.name}"
            if (
                isinstance(value, int)
                and not isinstance(value, bool)
                and (field.primary_key or field.is_relation)
            ):
                ints[source].add(value)
            elif isinstance(value, uuid.UUID):
                uuids[source].add(str(value))
            elif isinstance(value, str) and value:
                texts[field.name].add(value)
    return ints, uuids, texts


def _sample(pool_by_source, rng, preferred):
    """Every value of the sources ``preferred`` names (the model the path is about), then
    one value of each other source in random order (every model gets tried somewhere),
    then random others, up to ``SAMPLES_PER_PARAMETER`` beyond the preferred ones."""
    first = sorted({v for src, values in pool_by_source.items() if preferred(src) for v in values})
    others = {src: values for src, values in pool_by_source.items() if not preferred(src)}
    picked = [rng.choice(sorted(values)) for values in others.values()]
    rest = sorted({v for values in others.values() for v in values} - set(picked))
    rng.shuffle(picked)
    rng.shuffle(rest)
    tail = [v for v in picked + rest if v not in first]
    return first + tail[:SAMPLES_PER_PARAMETER]


def _about(path: str, param: str):
    """Whether a source (``Model.field``) is what ``param`` of ``path`` most likely names:
    the field has the parameter's name, or the model is the resource the path names."""
    words = [w for w in path.split("/") if w and not w.startswith("{")]
    resource = "".join(c for c in (words[-1] if words else "") if c.isalpha()).lower()
    before = path.split("{" + param + "}")[0].strip("/").split("/")[-1]
    resource = "".join(c for c in before if c.isalpha()).lower() or resource
    singular = resource[:-3] + "y" if resource.endswith("ies") else resource.rstrip("s")
    bare = param.removesuffix("_id")

    def preferred(source: str) -> bool:
        model, field = source.split(".")
        name = model.lower()
        if field in {param, bare} or (bare == model.lower() and field == "id"):
            return True
        return (
            field == "id"
            and bool(singular)
            and (name.startswith(singular) or singular.startswith(name))
        )

    return preferred


def _schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def _collections():
    """Every GET without path parameters, with its query parameter names."""
    for path, item in _schema()["paths"].items():
        operation = item.get("get")
        if operation and "{" not in path:
            yield path, [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]


def _operations():
    schema = _schema()
    for path, item in schema["paths"].items():
        params = [p for p in item.get("parameters", []) if p["in"] == "path"]
        for method, operation in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            path_params = params + [
                p for p in operation.get("parameters", []) if p.get("in") == "path"
            ]
            if path_params:
                yield path, method, path_params


def _candidates(path, param, ints, uuids, texts, rng):
    schema = param.get("schema", {})
    preferred = _about(path, param["name"])
    if schema.get("type") == "integer" or schema.get("pattern") in {r"^\d+$", r"^[0-9]+$"}:
        return _sample(ints, rng, preferred)
    if schema.get("format") == "uuid":
        return _sample(uuids, rng, preferred)
    return sorted(texts.get(param["name"], set()))


def _snapshot(rows):
    return {
        (type(obj).__name__, str(obj.pk)): json.dumps(
            list(type(obj).objects.filter(pk=obj.pk).values()), default=str, sort_keys=True
        )
        for obj in rows
    }


def _probe(client, marker, ints, uuids, texts, rng):
    leaks, probed = [], 0
    for path, method, params in _operations():
        choices = [_candidates(path, p, ints, uuids, texts, rng) for p in params]
        uuid_params = {p["name"] for p in params if p.get("schema", {}).get("format") == "uuid"}
        if not all(choices):
            continue
        for index in range(max(len(c) for c in choices)):
            values = {p["name"]: c[index % len(c)] for p, c in zip(params, choices, strict=True)}
            url = path
            for name, value in values.items():
                url = url.replace("{" + name + "}", str(value))
            response = getattr(client, method)(url, {}, format="json")
            probed += 1
            text = _body(response).decode("utf-8", "replace")
            for value in values.values():
                if isinstance(value, str) and not value.isdigit():
                    text = text.replace(json.dumps(value)[1:-1], "")  # an echo of the URL
            if marker in text:
                leaks.append(f"{method.upper()} {url} → {response.status_code}: {text[:300]}")
            elif method == "get" and response.status_code < 300 and uuid_params & set(values):
                # UUIDs never collide across tables: a read must be refused. (An integer id
                # may also name one of the prober's own rows; the marker check covers it.)
                leaks.append(f"{method.upper()} {url} → {response.status_code} (expected 403/404)")
    return leaks, probed


def _publish_fact(company, seeder):
    from orgmemory.models import OperationLogEntry
    from orgmemory.services.facts import fact_publish
    from persistence.principal import Principal

    owner = MembershipFactory(company=company, role="owner", user__password=None)
    entry = fact_publish(
        company=company,
        actor=Principal.for_human(owner.user, company, "owner"),
        content=f"{seeder.marker} fact content",
        category="adr",
        tags=[seeder.marker],
    )
    seeder.made[OperationLogEntry] = entry
    seeder.made[OrgFact] = OrgFact.objects.get(fact_id=entry.fact_id)


def _file_write_request(company, agent, seeder):
    from orgmemory.services.write_requests import write_request_file
    from persistence.principal import Principal

    seeder.made[WriteAccessRequest] = write_request_file(
        company=company,
        actor=Principal.for_agent(agent),
        content=f"{seeder.marker} requested content",
        category="adr",  # an agent below senior may request it
        tags=[seeder.marker],
        justification=f"{seeder.marker} justification",
    )


@pytest.fixture
def world():
    company, other = CompanyFactory(), CompanyFactory()
    prober = make_agent_caller(company=company, memory_level="persistent")
    peer = make_agent_caller(company=company, memory_level="persistent")
    victim = make_agent_caller(company=other, memory_level="persistent")
    human = APIClient()
    human.force_login(MembershipFactory(company=company, role="owner", user__password=None).user)

    seeder = Seeder(other, VICTIM, victim.agent, AgentFactory(company=other, name=VICTIM))
    _publish_fact(other, seeder)
    _file_write_request(other, victim.agent, seeder)
    victim_rows = [seeder.row(model) for model in company_scoped_models()]
    victim_rows += [victim.agent, seeder.second]
    peer_seeder = Seeder(company, PEER, peer.agent, prober.agent)
    _file_write_request(company, peer.agent, peer_seeder)
    peer_rows = [
        peer_seeder.row(model, **{k: (peer.agent if v == "peer" else v) for k, v in fixed.items()})
        for model, fixed in PEER_PRIVATE.items()
    ]
    return {
        "prober": prober,
        "human": human,
        "victim_agent": victim.agent,
        "victim_rows": [r for r in victim_rows if r is not None],
        "peer_rows": [r for r in peer_rows if r is not None],
        "skipped": {**seeder.skipped, **peer_seeder.skipped},
    }


def test_every_company_scoped_model_is_seeded(world):
    seeded = {type(row) for row in world["victim_rows"]}
    missing = [m.__name__ for m in company_scoped_models() if m not in seeded]
    assert not missing, f"could not seed {missing}: {world['skipped']}"
    assert {type(row) for row in world["peer_rows"]} == set(PEER_PRIVATE)


@pytest.mark.parametrize("who", ["agent", "human"])
def test_another_companys_ids_answer_404_or_403_never_data(world, who):
    client = world["prober"].client if who == "agent" else world["human"]
    rows = world["victim_rows"]
    before = _snapshot(rows)
    ints, uuids, texts = _identifiers(rows)
    leaks, probed = _probe(client, VICTIM, ints, uuids, texts, random.Random(14))
    assert probed > 300, "the probe reached the id-taking endpoints"
    assert not leaks, f"{len(leaks)} of {probed} probes leaked:\n" + "\n".join(leaks[:40])
    assert _snapshot(rows) == before


def _body(response) -> bytes:
    """The whole body, also of a streamed response (the JSON Lines export)."""
    if response.streaming:
        return b"".join(response.streaming_content)
    return response.content


@pytest.mark.parametrize("who", ["agent", "human"])
def test_lists_filtered_by_another_companys_ids_show_nothing_of_it(world, who):
    client = world["prober"].client if who == "agent" else world["human"]
    victim_agent = world["victim_agent"].pk
    leaks, listed = [], 0
    for path, query in _collections():
        filters = {name: victim_agent for name in query if name in {"agent", "assignee", "lead"}}
        for params in ({}, filters) if filters else ({},):
            response = client.get(path, params)
            listed += 1
            body = _body(response)
            assert response.status_code < 500, (path, body[:300])
            if VICTIM in body.decode("utf-8", "replace"):
                leaks.append(f"GET {path} {params} → {body[:300]!r}")
    assert listed > 30
    assert not leaks, "\n".join(leaks)


def test_another_agents_private_ids_answer_404_or_403_never_data(world):
    rows = world["peer_rows"]
    before = _snapshot(rows)
    ints, uuids, texts = _identifiers(rows)
    leaks, probed = _probe(world["prober"].client, PEER, ints, uuids, texts, random.Random(14))
    assert probed > 20
    assert not leaks, f"{len(leaks)} of {probed} probes leaked:\n" + "\n".join(leaks[:40])
    assert _snapshot(rows) == before


def _console_routes() -> list[tuple[str, dict[str, str]]]:
    """Every console URL pattern as (route with ``<name>`` placeholders, name → converter)."""
    from django.urls import URLPattern, URLResolver, get_resolver

    found = []

    def walk(patterns, prefix, converters):
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            merged = {**converters, **getattr(pattern.pattern, "converters", {})}
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route, merged)
            elif isinstance(pattern, URLPattern) and route.startswith("console/"):
                names = {
                    name: type(converter).__name__.removesuffix("Converter").lower()
                    for name, converter in merged.items()
                }
                found.append((route, names))

    walk(get_resolver().url_patterns, "", {})
    return found


def test_the_console_and_the_django_q_admin_show_nothing_of_another_company(world):
    """The probe's second half: the humans' pages. Every console page that takes an id is
    requested with the victim's ids by a member of the prober's company, and the django_q
    admin (which would list every company's schedules and tasks) by a non-superuser staff
    user holding every django_q permission."""
    from django.contrib.auth.models import Permission
    from django.test import Client
    from django_q.models import Schedule

    from persistence.models import CompanyMembership

    rows = world["victim_rows"]
    ints, uuids, texts = _identifiers(rows)
    rng = random.Random(14)
    routes = [(route, names) for route, names in _console_routes() if names]
    assert len(routes) >= 3, routes
    membership = CompanyMembership.objects.filter(company=world["prober"].company).first()
    human = Client()
    human.force_login(membership.user)
    leaks, probed = [], 0
    for route, names in routes:
        for _ in range(SAMPLES_PER_PARAMETER):
            url = "/" + route
            for name, kind in names.items():
                pool = uuids if kind == "uuid" else (ints if kind == "int" else texts)
                value = str(rng.choice(pool)) if pool else "1"
                url = url.replace(f"<{kind}:{name}>", value).replace(f"<{name}>", value)
            response = human.get(url)
            probed += 1
            assert response.status_code < 500, (url, response.status_code)
            if VICTIM in response.content.decode("utf-8", "replace"):
                leaks.append(f"GET {url} → {response.status_code}")
    assert probed >= 3 * SAMPLES_PER_PARAMETER
    assert not leaks, "\n".join(leaks)

    # The django_q admin: superusers only, whatever permissions a staff user holds.
    Schedule.objects.create(name=f"{VICTIM}-schedule", func="math.floor", args="1")
    staff = membership.user
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="django_q"))
    admin = Client()
    admin.force_login(staff)
    victim_schedule = Schedule.objects.get(name=f"{VICTIM}-schedule")
    for url in (
        "/admin/django_q/schedule/",
        "/admin/django_q/schedule/add/",
        f"/admin/django_q/schedule/{victim_schedule.pk}/change/",
        "/admin/django_q/success/",
        "/admin/django_q/failure/",
        "/admin/django_q/ormq/",
    ):
        response = admin.get(url)
        assert response.status_code == 403, (url, response.status_code)
        assert VICTIM not in response.content.decode("utf-8", "replace")
    assert "django_q" not in admin.get("/admin/").content.decode()
