"""Bodies and responses of the fine-tune endpoints (company admins)."""

from __future__ import annotations

from rest_framework import serializers

from memory.finetune.models import AdapterCheckpoint, FineTuneRun
from memory.finetune.services import FULL_MODEL, LINEAR_ADAPTER
from synthorg.api.serializers import ModelSerializer, Serializer

METHOD_HELP = (
    "`linear_adapter` (default): a query-side linear adapter trained on this server's CPU. "
    "`full_model`: a full fine-tune of the base model, an optional extra this installation "
    "does not include (501 `not_supported`)."
)
REASON_MAX_CHARS = 2000


class PlanSerializer(Serializer):
    method = serializers.ChoiceField(
        choices=[LINEAR_ADAPTER, FULL_MODEL], default=LINEAR_ADAPTER, help_text=METHOD_HELP
    )


class GuardrailSerializer(Serializer):
    """The guardrail's two body parts (the acting human is the session)."""

    confirm = serializers.JSONField(
        required=False, help_text='Must be literally `true` (not `"true"`, not 1).'
    )
    reason = serializers.CharField(
        required=False, allow_blank=True, max_length=REASON_MAX_CHARS,
        help_text="Why; must not be blank; recorded in the audit trail.",
    )  # fmt: skip


class RollbackSerializer(GuardrailSerializer):
    checkpoint = serializers.UUIDField(
        allow_null=True,
        help_text="The checkpoint to make active; `null` returns search to the base model.",
    )


class ProblemItemSerializer(Serializer):
    code = serializers.CharField()
    detail = serializers.CharField()


class PreflightSerializer(Serializer):
    ok = serializers.BooleanField()
    embedder_id = serializers.CharField()
    dims = serializers.IntegerField()
    pairs = serializers.DictField(
        child=serializers.IntegerField(), help_text="Training pairs each source offers."
    )
    problems = ProblemItemSerializer(many=True)


class FineTuneRunSerializer(ModelSerializer):
    progress = serializers.FloatField(read_only=True, help_text="epochs done / epochs (0..1).")
    checkpoint = serializers.SerializerMethodField()
    error = serializers.CharField(source="reason", read_only=True)
    finished_at = serializers.DateTimeField(source="completed_at", read_only=True, allow_null=True)

    class Meta:
        model = FineTuneRun
        fields = [
            "id", "method", "status", "embedder_id", "dims", "params", "epochs_done",
            "epochs_total", "progress", "figures", "error", "checkpoint", "created_at",
            "started_at", "finished_at",
        ]  # fmt: skip
        read_only_fields = fields

    def get_checkpoint(self, run) -> str | None:
        checkpoint = getattr(run, "checkpoint", None) if hasattr(run, "checkpoint") else None
        return str(checkpoint.pk) if checkpoint is not None else None


class FineTuneRunPageSerializer(Serializer):
    count = serializers.IntegerField()
    results = FineTuneRunSerializer(many=True)


class AdapterCheckpointSerializer(ModelSerializer):
    class Meta:
        model = AdapterCheckpoint
        fields = [
            "id", "run", "embedder_id", "dims", "sha256", "is_active", "figures",
            "created_at", "activated_at",
        ]  # fmt: skip
        read_only_fields = fields


class ActiveEmbedderSerializer(Serializer):
    embedder_id = serializers.CharField()
    dims = serializers.IntegerField()
    enabled = serializers.BooleanField(help_text="memory.fine_tune.enabled")
    checkpoint = serializers.UUIDField(
        allow_null=True, help_text="The active adapter; null: the base model ranks alone."
    )
    applied = serializers.BooleanField(
        help_text="Whether searches apply the checkpoint (enabled, and it maps this embedder)."
    )


def gate_figures(figures: dict) -> dict | None:
    """The promotion gate's figures of an evaluated run (``None`` before evaluation):
    held-out recall@10 / nDCG@10 before and after, the gain, the margin and, when the company
    gave dev questions, the same on them."""
    if "ndcg_gain" not in figures:
        return None
    gate = {key: figures.get(key) for key in ("before", "after", "ndcg_gain", "min_gain")}
    dev = figures.get("dev")
    if dev is not None:
        gate["dev"] = {key: dev.get(key) for key in ("questions", "before", "after", "ndcg_gain")}
    return gate


class AgentFineTuneRunSerializer(ModelSerializer):
    """What an agent may read of a run (the ``get_fine_tune_status`` tool): its state and the
    gate's figures; not its settings, pair counts or error text (server paths), which are
    for the company's admins (REST, console)."""

    progress = serializers.FloatField(read_only=True, help_text="epochs done / epochs (0..1).")
    gate = serializers.SerializerMethodField()
    checkpoint = serializers.SerializerMethodField()
    finished_at = serializers.DateTimeField(source="completed_at", read_only=True, allow_null=True)

    class Meta:
        model = FineTuneRun
        fields = [
            "id", "method", "status", "embedder_id", "epochs_done", "epochs_total", "progress",
            "gate", "checkpoint", "created_at", "started_at", "finished_at",
        ]  # fmt: skip
        read_only_fields = fields

    def get_gate(self, run) -> dict | None:
        return gate_figures(run.figures or {})

    def get_checkpoint(self, run) -> str | None:
        checkpoint = getattr(run, "checkpoint", None) if hasattr(run, "checkpoint") else None
        return str(checkpoint.pk) if checkpoint is not None else None
