"""Migrations memory 0023 and finetune 0001–0002: a database at main's state (the fine-tune
tables in ``memory``, runs with heartbeats) migrates forward with its rows where they were —
the tables keep their names, the content types follow the models — and its runs become
durable jobs: a planned run is due at its last heartbeat, a running one is leased from its
``updated_at`` and reclaimed by the kernel's schedule, the revivals it had count as its attempts."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from memory.finetune.models import AdapterCheckpoint, FineTuneRun, FineTuneRunStatusChange
from memory.finetune.services import FINE_TUNE_JOB, fine_tune_auto_resume
from synthorg.jobs.dispatch import jobs_dispatch
from tests.persistence.factories import CompanyFactory

pytestmark = pytest.mark.django_db(transaction=True)

MAIN = "0022_vector_indexes_private_and_shared"
COLUMNS = (
    "id, company_id, method, embedder_id, dims, status, params, epochs_done, epochs_total, "
    "figures, error, created_at, updated_at, finished_at, heartbeat_at, auto_resumes, "
    "synthetic_pairs"
)


def insert_run(company, status, *, at, finished=None, error="", auto_resumes=0) -> uuid.UUID:
    run_id = uuid.uuid4()
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO memory_finetunerun ({COLUMNS}) VALUES "
            "(%s, %s, 'linear_adapter', 'e', 4, %s, '{}', 1, 3, '{}', %s, %s, %s, %s, %s, %s, "
            "'[]')",
            [run_id, company.pk, status, error, at, at, finished, at, auto_resumes],
        )
    return run_id


def test_main_s_rows_are_taken_over_and_become_durable_jobs():
    call_command("migrate", "memory", MAIN, verbosity=0)  # finetune unapplied with it
    try:
        tables = connection.introspection.table_names()
        assert "memory_finetunerun" in tables and "finetune_finetunerunstatuschange" not in tables
        company = CompanyFactory()
        at = timezone.now() - timedelta(minutes=30)
        planned = insert_run(company, "planned", at=at)
        running = insert_run(CompanyFactory(), "running", at=at, auto_resumes=2)
        failed = insert_run(CompanyFactory(), "failed", at=at, finished=at, error="boom")
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO memory_adaptercheckpoint (id, company_id, run_id, embedder_id, "
                "dims, directory, file_name, sha256, is_active, figures, created_at, "
                "activated_at) VALUES (%s, %s, %s, 'e', 4, 'ck', 'a.npy', %s, true, '{}', %s, %s)",
                [uuid.uuid4(), company.pk, failed, "0" * 64, at, at],
            )
    finally:
        call_command("migrate", verbosity=0)

    assert {ct.model for ct in ContentType.objects.filter(app_label="finetune")} >= {
        "finetunerun", "adaptercheckpoint",
    }  # fmt: skip
    assert not ContentType.objects.filter(app_label="memory", model="finetunerun").exists()
    rows = {run.pk: run for run in FineTuneRun.objects.all()}
    assert (rows[planned].status, rows[planned].next_attempt_at, rows[planned].attempts) == (
        "planned", at, 0,
    )  # fmt: skip
    assert (rows[running].status, rows[running].claimed_until, rows[running].attempts) == (
        "running", None, 2,
    )  # fmt: skip
    assert (rows[failed].reason, rows[failed].completed_at) == ("boom", at)
    assert AdapterCheckpoint.objects.get().run_id == failed

    # The schedule reclaims the running run (leased from its updated_at) and its company's
    # task re-queues it; the planned one, due at its last heartbeat, gets its company's task.
    now = timezone.now()
    dispatch = jobs_dispatch(FINE_TUNE_JOB, now=now)
    assert (dispatch.reclaimed, set(dispatch.companies)) == (
        1, {company.pk, rows[running].company_id},
    )  # fmt: skip
    assert fine_tune_auto_resume(running, now) is True
    assert FineTuneRun.objects.get(pk=running).status == "planned"
    assert list(FineTuneRunStatusChange.objects.filter(run_id=running).values_list("status")) == [
        ("failed",), ("planned",),
    ]  # fmt: skip
