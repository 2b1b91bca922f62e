"""Console fine-tune page: runs with their figures and verdict, checkpoints with the active one;
admins plan (preflight), start, cancel, roll back and delete through the services, with the
guardrail; viewers and operators read only; another company's rows are 404."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils.html import escape

from memory.finetune.console.views import ROLE_CANNOT_CHANGE
from memory.finetune.models import AdapterCheckpoint, FineTuneRun
from memory.finetune.services import (
    FULL_MODEL_UNSUPPORTED,
    IN_FLIGHT,
    fine_tune_execute,
)
from persistence.models import AuditEntry
from synthorg.tools import CONFIRM_REQUIRED, REASON_REQUIRED
from tests.memory.finetune.data import QueryEmbedder, crafted, enable, store_pairs
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db(transaction=True)
PAGE = "/console/memories/fine-tune"
PAIRS = 120


def client_for(company, role) -> Client:
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client()
    client.force_login(membership.user)
    return client


@pytest.fixture
def trained(tmp_path, settings):
    """A company with the fixture's memories, fine-tuning enabled, and its admin's client."""
    company = CompanyFactory()
    docs, queries = crafted(PAIRS)
    store_pairs(AgentFactory(company=company), docs)
    enable(company, tmp_path, settings)
    return company, client_for(company, "admin"), QueryEmbedder(queries, docs)


def start(client) -> FineTuneRun:
    response = client.post(f"{PAGE}/runs", {"method": "linear_adapter"})
    assert response.status_code == 302 and response.url == PAGE
    return FineTuneRun.objects.order_by("-created_at").first()


def html(response) -> str:
    return response.content.decode()


def test_viewer_reads_runs_figures_verdicts_and_the_active_checkpoint(trained, tmp_path, settings):
    company, admin, embedder = trained
    promoted = start(admin)
    assert fine_tune_execute(promoted.pk, embedder=embedder) == "promoted"
    enable(company, tmp_path, settings, min_gain=1.0)
    refused = start(admin)
    assert fine_tune_execute(refused.pk, embedder=embedder) == "not_promoted"
    promoted.refresh_from_db()
    refused.refresh_from_db()
    checkpoint = AdapterCheckpoint.objects.get(company=company)

    viewer = client_for(company, "viewer")
    response = viewer.get(PAGE)
    page = html(response)
    assert response.status_code == 200
    assert page.count('class="run-row"') == 2 and page.count('class="checkpoint-row"') == 1
    f = promoted.figures
    assert (
        f'<td data-label="nDCG@10" class="run-ndcg">{f["before"]["ndcg@10"]:.3f} → '
        f"{f['after']['ndcg@10']:.3f}</td>"
    ) in page
    assert (
        f'<td data-label="recall@10" class="run-recall">{f["before"]["recall@10"]:.3f} → '
        f"{f['after']['recall@10']:.3f}</td>"
    ) in page
    assert f'<td data-label="Gain" class="run-gain">{f["ndcg_gain"]:.4f} / 0.05</td>' in page
    assert f"{refused.figures['ndcg_gain']:.4f} / 1.0</td>" in page
    assert "activated<br><code>" + str(checkpoint.pk) in page
    assert "refused: gain below the margin" in page
    assert f'<code id="active-checkpoint">{checkpoint.pk}</code>' in page
    assert '<td data-label="Active" class="checkpoint-active">active</td>' in page
    # Viewers read only: no plan form, no action forms.
    for control in ('id="plan"', "Cancel run", "Make active", "rollback-base", "delete-form"):
        assert control not in page

    stranger = html(client_for(CompanyFactory(), "admin").get(PAGE))
    assert 'id="no-runs"' in stranger and str(checkpoint.pk) not in stranger


def test_admin_starts_a_run_once_and_readers_may_not(trained):
    company, admin, _embedder = trained
    for role in ("viewer", "operator"):
        response = client_for(company, role).post(f"{PAGE}/runs", {"method": "linear_adapter"})
        assert response.status_code == 403
        assert f'id="action-error">{escape(ROLE_CANNOT_CHANGE)}</p>' in html(response)
    assert not FineTuneRun.objects.exists()

    run = start(admin)
    assert (run.status, run.company_id) == ("planned", company.pk)
    entry = AuditEntry.objects.get(action_type="memory.fine_tune.started")
    assert (entry.target_id, entry.details["via"]) == (str(run.pk), "console")
    response = admin.post(f"{PAGE}/runs", {"method": "linear_adapter"})
    assert response.status_code == 409
    assert IN_FLIGHT.format(run=run.pk) in html(response)
    assert FineTuneRun.objects.count() == 1

    response = admin.post(f"{PAGE}/runs", {"method": "bogus"})
    assert response.status_code == 400 and "bogus is not one of the available" in html(response)


def test_preflight_shows_problems_and_full_model_is_not_supported(trained, tmp_path, settings):
    company, admin, _embedder = trained
    enable(company, tmp_path, settings, enabled=False)
    response = admin.post(f"{PAGE}/preflight", {"method": "linear_adapter"})
    assert 'id="preflight-blocked"' in html(response) and "fine_tune_disabled" in html(response)
    enable(company, tmp_path, settings, min_pairs=PAIRS + 1, max_pairs=PAIRS + 1)
    response = admin.post(f"{PAGE}/preflight", {"method": "linear_adapter"})
    page = html(response)
    assert response.status_code == 200 and 'id="preflight-blocked"' in page
    codes = [
        line.split("<code>")[1].split("</code>")[0]
        for line in page.split('<li class="preflight-problem">')[1:]
    ]
    assert codes == ["not_enough_pairs"]
    assert '<span class="pair-count">turn 120</span>' in page
    response = admin.post(f"{PAGE}/preflight", {"method": "full_model"})
    assert response.status_code == 501 and FULL_MODEL_UNSUPPORTED in html(response)
    assert not FineTuneRun.objects.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"reason": "wrong data"}, CONFIRM_REQUIRED),
        ({"confirm": "on", "reason": " "}, REASON_REQUIRED),
    ],
)
def test_cancel_needs_the_confirmation_and_a_reason(trained, body, message):
    _company, admin, _embedder = trained
    run = start(admin)
    response = admin.post(f"{PAGE}/runs/{run.pk}/cancel", body)
    assert response.status_code == 400 and message in html(response)
    assert FineTuneRun.objects.get(pk=run.pk).status == "planned"
    assert not AuditEntry.objects.filter(action_type="memory.fine_tune.cancelled").exists()


def test_cancel_resume_rollback_and_delete_through_the_services(trained):
    _company, admin, embedder = trained
    run = start(admin)
    response = admin.post(f"{PAGE}/runs/{run.pk}/cancel", {"confirm": "on", "reason": "oops"})
    assert response.status_code == 302
    assert FineTuneRun.objects.get(pk=run.pk).status == "cancelled"
    entry = AuditEntry.objects.get(action_type="memory.fine_tune.cancelled")
    assert entry.details == {"reason": "oops", "via": "console", "from_status": "planned"}
    assert admin.post(f"{PAGE}/runs/{run.pk}/resume").status_code == 302
    assert FineTuneRun.objects.get(pk=run.pk).status == "planned"
    assert fine_tune_execute(run.pk, embedder=embedder) == "promoted"
    first = AdapterCheckpoint.objects.get()
    second_run = start(admin)
    assert fine_tune_execute(second_run.pk, embedder=embedder) == "promoted"
    second = AdapterCheckpoint.objects.exclude(pk=first.pk).get()
    guard = {"confirm": "on", "reason": "regression"}

    # Another company's admin: every id of this company is a 404, nothing changes.
    stranger = client_for(CompanyFactory(), "admin")
    assert stranger.post(f"{PAGE}/runs/{second_run.pk}/resume").status_code == 404
    assert stranger.post(f"{PAGE}/rollback", {"checkpoint": first.pk, **guard}).status_code == 404
    delete = f"{PAGE}/checkpoints/{first.pk}/delete"
    assert stranger.post(delete, guard).status_code == 404
    assert AdapterCheckpoint.objects.get(is_active=True) == second

    assert admin.post(f"{PAGE}/rollback", {"checkpoint": "base", **guard}).status_code == 302
    assert not AdapterCheckpoint.objects.filter(is_active=True).exists()
    assert admin.post(f"{PAGE}/rollback", {"checkpoint": first.pk, **guard}).status_code == 302
    assert AdapterCheckpoint.objects.get(is_active=True) == first
    response = admin.post(delete, guard)
    assert response.status_code == 409 and "is active; roll back" in html(response)
    response = admin.post(f"{PAGE}/rollback", {"checkpoint": "nope", **guard})
    assert response.status_code == 400 and "Pick a checkpoint or the base model." in html(response)
    assert admin.post(f"{PAGE}/checkpoints/{second.pk}/delete", guard).status_code == 302
    assert list(AdapterCheckpoint.objects.values_list("pk", flat=True)) == [first.pk]
    assert list(
        AuditEntry.objects.filter(
            action_type__in=[
                "memory.fine_tune.rolled_back", "memory.fine_tune.checkpoint_deleted",
            ]
        ).order_by("pk").values_list("action_type", "target_id", "details__via")
    ) == [
        ("memory.fine_tune.rolled_back", "base", "console"),
        ("memory.fine_tune.rolled_back", str(first.pk), "console"),
        ("memory.fine_tune.checkpoint_deleted", str(second.pk), "console"),
    ]  # fmt: skip
    page = html(admin.get(PAGE))
    assert (
        'id="rollback-base"' in page
        and 'class="delete-form"'
        not in page.split(f'id="checkpoint-{first.pk}"')[1].split("</tr>")[0]
    )
