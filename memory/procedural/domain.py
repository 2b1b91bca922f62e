"""Value objects of procedural learning (pure: no Django import).

* :class:`ExecutionReportInput` — what an agent may report (every interface validates
  through it, so REST, MCP and commands accept exactly the same reports).
* :class:`FailureAnalysisPayload` / :class:`SuccessAnalysisPayload` — what the proposer
  sees: task metadata, the sanitized error, tool calls and counts. Never conversation text.
* :class:`ProceduralMemoryProposal` — the proposer's JSON answer, validated field by field.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)

from synthorg.llm.replies import ReplyFormatError, reply_json
from synthorg.strict_numbers import StrictNumbersModel
from synthorg.subjects import validate_subject

ERROR_CATEGORY_MAX = 100
ERROR_MESSAGE_MAX = 4_000
TASK_TITLE_MAX = 500
TASK_TYPE_MAX = 100
TASK_DESCRIPTION_MAX = 10_000
RECOVERY_MAX = 4_000
TOOL_NAME_MAX = 200
TOOL_ERROR_MAX = 2_000
MAX_TOOL_CALLS = 200
MAX_COUNT = 1_000_000
MAX_DURATION_MS = 7 * 24 * 3600 * 1000  # a week

DISCOVERY_MAX = 600
TIER_TEXT_MAX = 2_000
STEP_MAX = 1_000
MAX_STEPS = 50
MAX_PROPOSAL_TAGS = 20
PROPOSAL_TAG_MAX = 64

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, str_strip_whitespace=True)


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    PARTIAL = "partial"


class ToolCallStatus(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    TIMEOUT = "timeout"


class ProceduralScope(StrEnum):
    AGENT = "agent"
    ROLE = "role"
    DEPARTMENT = "department"
    ORG = "org"


NUL_IN_TEXT = "must not contain NUL characters"
MAX_ID = 2**63 - 1


def refuse_nul(value: Any) -> Any:
    """``value`` (a string, or a list of them) unchanged, or ``ValueError`` when a string in
    it holds a NUL character (PostgreSQL text cannot): a pydantic field validator's body."""
    texts = value if isinstance(value, list) else [value]
    if any(isinstance(text, str) and "\x00" in text for text in texts):
        raise ValueError(NUL_IN_TEXT)
    return value


class _ReportPart(StrictNumbersModel):
    """Strict input: unknown fields refused; NUL characters (PostgreSQL text cannot hold
    them) refused in every string field; numbers only as JSON numbers (``true`` or ``"3"``
    for a count is refused, :mod:`synthorg.strict_numbers`)."""

    model_config = _STRICT

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        return refuse_nul(value) if isinstance(value, str) else value


class ReportedError(_ReportPart):
    category: Annotated[str, StringConstraints(min_length=1, max_length=ERROR_CATEGORY_MAX)]
    message: str = Field(default="", max_length=ERROR_MESSAGE_MAX)


class ToolCall(_ReportPart):
    name: Annotated[str, StringConstraints(min_length=1, max_length=TOOL_NAME_MAX)]
    status: ToolCallStatus
    error: str | None = Field(default=None, max_length=TOOL_ERROR_MAX)
    duration_ms: int = Field(default=0, ge=0, le=MAX_DURATION_MS)


class ExecutionReportInput(_ReportPart):
    """One execution outcome as an agent reports it (before redaction)."""

    task_id: int | None = Field(default=None, ge=1, le=MAX_ID)
    task_title: str = Field(default="", max_length=TASK_TITLE_MAX)
    task_type: str = Field(default="", max_length=TASK_TYPE_MAX)
    task_description: str = Field(default="", max_length=TASK_DESCRIPTION_MAX)
    outcome: Outcome
    error: ReportedError | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list, max_length=MAX_TOOL_CALLS)
    retry_count: int = Field(default=0, ge=0, le=MAX_COUNT)
    turn_count: int = Field(default=0, ge=0, le=MAX_COUNT)
    quality_score: float | None = Field(default=None, ge=0.0, le=10.0)
    duration_ms: int = Field(default=0, ge=0, le=MAX_DURATION_MS)
    recovery: str = Field(default="", max_length=RECOVERY_MAX)
    #: the end user the task served (:mod:`synthorg.subjects`): linked beside the report
    #: (``ExecutionReportSubject``), so erasing the subject unlinks it
    subject: str | None = None

    @field_validator("subject", mode="before")  # before the model's whitespace stripping
    @classmethod
    def _subject_valid(cls, value: Any) -> Any:
        return validate_subject(value) if isinstance(value, str) else value


class FailureAnalysisPayload(BaseModel):
    """What the failure proposer is shown (already redacted)."""

    model_config = ConfigDict(frozen=True)

    task_title: str
    task_type: str
    task_description: str
    outcome: str
    error_category: str
    error_message: str
    tool_calls: list[dict[str, Any]]
    retry_count: int
    turn_count: int
    duration_ms: int
    recovery: str


class SuccessAnalysisPayload(BaseModel):
    """The lighter payload of the success proposer: what worked, not what broke."""

    model_config = ConfigDict(frozen=True)

    task_title: str
    task_type: str
    task_description: str
    quality_score: float | None
    tool_calls: list[dict[str, Any]]
    turn_count: int
    duration_ms: int


Text2000 = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=TIER_TEXT_MAX)
]
Step = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=STEP_MAX)]
Tag = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=PROPOSAL_TAG_MAX)
]


class ProceduralMemoryProposal(BaseModel):
    """The proposer's lesson: three tiers, a confidence and a distribution scope."""

    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)

    discovery: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=DISCOVERY_MAX)
    ]
    condition: Text2000
    action: Text2000
    rationale: Text2000
    execution_steps: list[Step] = Field(min_length=1, max_length=MAX_STEPS)
    confidence: float = Field(ge=0.0, le=1.0)
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_PROPOSAL_TAGS)
    scope: ProceduralScope = ProceduralScope.AGENT
    name: str | None = Field(default=None, max_length=64)
    #: what the lesson advises, as data (:class:`memory.procedural.advice.Advice` as a dict):
    #: computed from the records, never taken from an LLM's answer (the parser drops it)
    advice: dict[str, Any] | None = None

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        return refuse_nul(value)


def _text(max_length: int) -> dict:
    return {"type": "string", "maxLength": max_length}


#: What a proposer (and the evolver's drafter) is asked to answer, as a strict JSON schema for
#: providers' structured output (every property required, no others). The answer is still
#: validated by :class:`ProceduralMemoryProposal` whichever way it came.
PROPOSAL_JSON_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "name",
        "discovery",
        "condition",
        "action",
        "rationale",
        "execution_steps",
        "confidence",
        "tags",
        "scope",
    ],
    "properties": {
        "name": _text(64),
        "discovery": _text(DISCOVERY_MAX),
        "condition": _text(TIER_TEXT_MAX),
        "action": _text(TIER_TEXT_MAX),
        "rationale": _text(TIER_TEXT_MAX),
        "execution_steps": {"type": "array", "items": _text(STEP_MAX), "maxItems": MAX_STEPS},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "tags": {"type": "array", "items": _text(PROPOSAL_TAG_MAX), "maxItems": MAX_PROPOSAL_TAGS},
        "scope": {"type": "string", "enum": [scope.value for scope in ProceduralScope]},
    },
}


class ProposalError(ValueError):
    """The proposer's answer is not a usable proposal; ``reason`` is short and loggable."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_proposal(text: str, *, truncated: bool = False) -> ProceduralMemoryProposal:
    """Parse the proposer's reply: the first JSON object in it, wherever the model put it
    (fence, prose, after a reasoning block; :func:`synthorg.llm.replies.reply_json`)."""
    try:
        data = reply_json(text, truncated=truncated, expect=dict)
    except ReplyFormatError as exc:
        raise ProposalError(f"invalid JSON from proposer: {exc}") from None
    data = {key: value for key, value in dict(data).items() if key != "advice"}
    try:
        return ProceduralMemoryProposal.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"]) or "proposal"
        message = first["msg"].removeprefix("Value error, ")
        raise ProposalError(f"invalid proposal: {loc}: {message}") from None


_SLUG = re.compile(r"[^a-z0-9]+")


def skill_name(text: str, *, fallback: str = "lesson") -> str:
    """An Agent Skills name: lower-case letters, digits and hyphens, at most 64 characters."""
    slug = _SLUG.sub("-", text.lower()).strip("-")[:64].strip("-")
    return slug or fallback


CaptureStrategyName = Literal["failure", "success", "hybrid"]
