"""The demo's local stand-in model: an OpenAI-wire server that is *not* a language model.

``make demo`` starts it (``manage.py demo_llm``) so a newcomer sees the LLM paths of the
learning half — lesson capture, evolver drafts, extraction, dream, summaries, Search-and-Ask
— run end to end without an LLM account. It answers only the product's own prompts, and it
answers each one with the product's own deterministic path, so what it says is exactly
what the product would do without an LLM, delivered through the LLM path:

========================  ==================================================================
prompt (system message)   answer
========================  ==================================================================
failure / success         :func:`memory.procedural.rule_lessons.rule_lesson` of the report in
proposer                  the user message, as the proposal JSON
evolver drafter           the advice the evidence asks to word (computed by the product from
                          the reports), rendered as
                          :func:`memory.procedural.evolver.rule_drafting.skill_proposal` does
extraction                each turn of the conversation that is neither a system message nor
                          a question, nor already a memory, as an episodic fact
dream                     :func:`memory.ingestion.services.dream.extractive_core` and a diary
                          saying a stand-in wrote it
conversation summary,     :class:`memory.core.consolidation.extractive.ExtractivePreserver`
consolidation summary     over the text given
sufficiency check         ``{"sufficient": true}``
query reformulation       the last query tried, unchanged
========================  ==================================================================

Like a real provider it answers ``404 model_not_found`` for any model but
:data:`~synthorg.llm.standin.DEMO_STANDIN_MODEL` (the only one ``GET /v1/models`` lists),
``400`` for a prompt it does not know (``unknown_task``) or a malformed request, and cuts an
answer longer than ``max_tokens`` with ``finish_reason: length``. Every answer names the
stand-in as its ``model`` (recorded on lessons, runs and costs) and its
``system_fingerprint`` says it is not a real model. It binds loopback addresses only.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from memory.core.consolidation.abstractive import SYSTEM_PROMPT as CONSOLIDATION_SYSTEM
from memory.core.consolidation.extractive import ExtractivePreserver
from memory.core.retrieval.packing import estimate_tokens
from memory.ingestion.prompts import DREAM_SYSTEM, EXTRACTION_SYSTEM, SUMMARY_SYSTEM
from memory.ingestion.services.dream import extractive_core
from memory.procedural.advice import Advice, Evidence
from memory.procedural.evolver.drafting import SYSTEM_PROMPT as DRAFTING_SYSTEM
from memory.procedural.evolver.rule_drafting import SkillAdvice, skill_proposal
from memory.procedural.proposer import FAILURE_SYSTEM_PROMPT, SUCCESS_SYSTEM_PROMPT
from memory.procedural.rule_lessons import rule_lesson
from memory.prompting.llm_checks import REFORMULATION_SYSTEM, SUFFICIENCY_SYSTEM
from synthorg.llm.standin import DEMO_STANDIN_LABEL, DEMO_STANDIN_MODEL
from synthorg.llm.wire_server import WireServer

logger = logging.getLogger(__name__)

MODEL_ID = DEMO_STANDIN_MODEL
FINGERPRINT = f"{MODEL_ID} ({DEMO_STANDIN_LABEL})"
OWNER = f"synthorg-demo ({DEMO_STANDIN_LABEL})"
STANDIN_TAG = "demo-stand-in"
DIARY = (
    f"Dream written by the {DEMO_STANDIN_LABEL} ({MODEL_ID}): the facts of the previous core "
    "and the facts the journal recorded, kept verbatim (the extractive strategy)."
)
FACT_CONFIDENCE = 0.9
MAX_BODY = 4 * 1024 * 1024

NOT_LOOPBACK = "the demo stand-in binds loopback addresses only (127.0.0.1, ::1), not {host!r}"
UNKNOWN_MODEL = "The model `{model}` does not exist. This server serves only `{id}` ({label})."
UNKNOWN_TASK = (
    "`{id}` ({label}) answers only SynthOrg Memory's own prompts; this system message is "
    "none of them: {excerpt!r}"
)


class BadRequest(ValueError):
    """A request the stand-in refuses with 400 (``code`` as in an OpenAI error body)."""

    def __init__(self, message: str, *, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.code = code


# --- the answers --------------------------------------------------------------------------


def _after(text: str, prefix: str) -> str:
    if not text.startswith(prefix):
        raise BadRequest(f"the user message does not start with {prefix!r}")
    return text[len(prefix) :]


def _json_object(text: str) -> dict:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BadRequest(f"the user message carries no JSON object: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequest("the user message carries JSON that is not an object")
    return data


def _proposal_json(proposal) -> str:
    data = proposal.model_dump(mode="json")
    data["tags"] = [STANDIN_TAG, *[t for t in data["tags"] if t != STANDIN_TAG]]
    return json.dumps(data, ensure_ascii=False)


def _lesson(path: str) -> Callable[[str, str], str]:
    def answer(_system: str, user: str) -> str:
        report = _json_object(_after(user, "Execution report:\n"))
        lesson = rule_lesson(report, path=path)
        # the product appends the evidence computed from the report; the stand-in states none
        note = f"Worded by the {MODEL_ID} stand-in (not a real model) from the report's fields."
        return _proposal_json(lesson.model_copy(update={"rationale": note}))

    return answer


def _draft(_system: str, user: str) -> str:
    """The skill the product's own rule would draft: the advice the payload asks to word
    (computed from the reports) and its facts, rendered as the rule path renders them."""
    evidence = _json_object(_after(user, "Cross-agent evidence:\n"))
    advice = Advice.from_dict(evidence.get("advice"))
    facts = evidence.get("facts")
    if advice is None or not isinstance(facts, dict):
        raise BadRequest("the evidence carries no advice or facts to word")
    pattern = str(evidence.get("pattern") or "pattern")
    rate = evidence.get("failure_rate", evidence.get("success_rate"))
    support = int(evidence.get("reports_supporting_it") or 0)
    found = SkillAdvice(
        advice=advice,
        evidence=Evidence.from_dict(facts),
        support=support,
        reports=int(facts.get("reports") or support),
        message=next(iter(evidence.get("error_messages") or []), ""),
    )
    proposal = skill_proposal(
        found,
        pattern=pattern,
        confidence=min(1.0, max(0.0, float(rate))) if isinstance(rate, int | float) else 0.5,
        note=f"Worded by the {MODEL_ID} stand-in (not a real model).",
    )
    # the product renders the evidence after the answer; the stand-in words only the advice
    return _proposal_json(proposal.model_copy(update={"rationale": "Worded by the stand-in."}))


def _fenced(user: str, name: str) -> str:
    """The text inside ``<name>…</name>`` with the prompt's escaping undone."""
    match = re.search(rf"<{name}>\n(.*?)\n</{name}>", user, re.DOTALL)
    if match is None:
        raise BadRequest(f"the user message has no <{name}> block")
    return re.sub(r"&lt;(/?[a-z]+>)", r"<\1", match.group(1))


_TURN = re.compile(r"^\[(\d+)\] (\w+)(?: \(([^)]*)\))?: ", re.MULTILINE)


def _turns(conversation: str) -> list[tuple[str, str]]:
    """``(role, content)`` of each ``[seq] role (name): content`` line (content may span
    lines)."""
    starts = list(_TURN.finditer(conversation))
    turns = []
    for match, following in zip(starts, [*starts[1:], None], strict=True):
        end = following.start() if following else len(conversation)
        turns.append((match.group(2), conversation[match.end() : end].strip()))
    return turns


def _extraction(system: str, user: str) -> str:
    limit = int(re.search(r"At most (\d+) facts", system).group(1))  # type: ignore[union-attr]
    known = {
        line.partition("): ")[2].strip()
        for line in _fenced(user, "memories").splitlines()
        if line.startswith("- id=")
    }
    facts = []
    for role, content in _turns(_fenced(user, "conversation")):
        if role == "system" or not content or content.endswith("?") or content in known:
            continue
        facts.append(
            {
                "content": content,
                "category": "episodic",
                "confidence": FACT_CONFIDENCE,
                "tags": [STANDIN_TAG, role],
                "supersedes": [],
            }
        )
    return json.dumps({"facts": facts[:limit]}, ensure_ascii=False)


def _none_yet(text: str) -> str:
    return "" if text.strip() == "(none yet)" else text


def _dream(_system: str, user: str) -> str:
    core = _none_yet(_fenced(user, "core"))
    journal = _fenced(user, "journal")
    return json.dumps(
        {"core_summary": extractive_core(core, journal), "diary": DIARY}, ensure_ascii=False
    )


def _summary(_system: str, user: str) -> str:
    previous = _none_yet(_fenced(user, "summary"))
    conversation = _fenced(user, "conversation")
    return ExtractivePreserver().extract(f"{previous}\n{conversation}".strip())


def _consolidation(_system: str, user: str) -> str:
    memories = _fenced(user, "memories").replace("</ memories>", "</memories>")
    return ExtractivePreserver().extract(memories)


def _sufficient(_system: str, _user: str) -> str:
    return json.dumps({"sufficient": True})


def _same_query(_system: str, user: str) -> str:
    tried = re.search(r"Queries already tried:\n(.*?)\n\n", user, re.DOTALL)
    queries = [q[2:] for q in (tried.group(1) if tried else "").splitlines() if q[:2] == "- "]
    if queries:
        return queries[-1]
    question = re.match(r"Question: (.*)", user)
    if question is None:
        raise BadRequest("the user message names neither a question nor a query")
    return question.group(1)


def _template(prompt: str, placeholder: str) -> re.Pattern:
    """A product prompt with a ``{placeholder}`` number filled in, as an exact pattern."""
    return re.compile(re.escape(prompt).replace(re.escape(placeholder), r"\d+"), re.DOTALL)


def _exact(prompt: str) -> re.Pattern:
    return re.compile(re.escape(prompt), re.DOTALL)


#: (task name, the system message it answers, the answer); matched in full.
TASKS: tuple[tuple[str, re.Pattern, Callable[[str, str], str]], ...] = (
    ("failure_lesson", _exact(FAILURE_SYSTEM_PROMPT), _lesson("failure")),
    ("success_lesson", _exact(SUCCESS_SYSTEM_PROMPT), _lesson("success")),
    ("evolver_draft", _exact(DRAFTING_SYSTEM), _draft),
    ("extraction", _template(EXTRACTION_SYSTEM, "{max_facts}"), _extraction),
    ("dream", _template(DREAM_SYSTEM, "{max_tokens}"), _dream),
    ("conversation_summary", _template(SUMMARY_SYSTEM, "{max_tokens}"), _summary),
    ("consolidation_summary", _exact(CONSOLIDATION_SYSTEM), _consolidation),
    ("sufficiency_check", _exact(SUFFICIENCY_SYSTEM), _sufficient),
    ("query_reformulation", _exact(REFORMULATION_SYSTEM), _same_query),
)


def task_of(system: str) -> tuple[str, Callable[[str, str], str]]:
    for name, pattern, answer in TASKS:
        if pattern.fullmatch(system):
            return name, answer
    excerpt = " ".join(system.split())[:120]
    raise BadRequest(
        UNKNOWN_TASK.format(label=DEMO_STANDIN_LABEL, id=MODEL_ID, excerpt=excerpt),
        code="unknown_task",
    )


def complete(body: Any) -> tuple[int, dict]:
    """The status and JSON body answering one ``POST /v1/chat/completions`` body."""
    if not isinstance(body, dict):
        return 400, _error("the request body must be a JSON object", code="invalid_request")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        return 400, _error("you must provide a model parameter", code="missing_model")
    if model != MODEL_ID:
        message = UNKNOWN_MODEL.format(model=model, label=DEMO_STANDIN_LABEL, id=MODEL_ID)
        return 404, _error(message, code="model_not_found")
    if body.get("stream"):
        return 400, _error("the demo stand-in does not stream", code="unsupported_stream")
    messages = body.get("messages")
    if (
        not isinstance(messages, list)
        or not messages
        or not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages)
    ):
        return 400, _error("messages must be a non-empty list of {role, content}")
    system = next((m["content"] for m in messages if m.get("role") == "system"), "")
    user = "\n".join(m["content"] for m in messages if m.get("role") == "user")
    max_tokens = body.get("max_tokens")
    if max_tokens is not None and (
        not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
    ):
        return 400, _error("max_tokens must be a positive integer", code="invalid_max_tokens")
    try:
        name, answer = task_of(system)
        content = answer(system, user)
    except BadRequest as exc:
        return 400, _error(str(exc), code=exc.code)
    finish = "stop"
    if max_tokens is not None and estimate_tokens(content) > max_tokens:
        content, finish = content[: max_tokens * 4], "length"
    logger.info("demo stand-in answered %s (%d chars)", name, len(content))
    prompt_tokens = sum(estimate_tokens(m["content"]) for m in messages)
    completion_tokens = estimate_tokens(content)
    return 200, {
        "id": f"chatcmpl-{MODEL_ID}",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL_ID,
        "system_fingerprint": FINGERPRINT,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def models() -> dict:
    return {
        "object": "list",
        "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": OWNER}],
    }


def _error(message: str, *, code: str = "invalid_request") -> dict:
    kind = "not_found_error" if code == "model_not_found" else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# --- the server ---------------------------------------------------------------------------


def check_loopback(host: str) -> None:
    """Raise ``ValueError`` unless ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(NOT_LOOPBACK.format(host=host))


class _Handler(BaseHTTPRequestHandler):
    server_version = "synthorg-demo-standin"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("demo stand-in: " + format, *args)

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    def do_GET(self) -> None:
        if self._path() == "/v1/models":
            self._send(200, models())
        elif self._path() == f"/v1/models/{MODEL_ID}":
            self._send(200, models()["data"][0])
        else:
            self._send(404, _error(f"no route {self.path}", code="not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(413, _error("request body too large", code="too_large"))
            self.close_connection = True
            return
        raw = self.rfile.read(length)
        if self._path() != "/v1/chat/completions":
            self._send(404, _error(f"no route {self.path}", code="not_found"))
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, _error("the request body is not JSON", code="invalid_json"))
            return
        self._send(*complete(body))


class DemoLLMServer(WireServer):
    """The stand-in on ``host:port`` (``port=0``: a free one), served by a thread.

    >>> with DemoLLMServer() as server:
    ...     server.base_url  # 'http://127.0.0.1:<port>/v1'
    """

    thread_name = "demo-llm"

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        check_loopback(host)
        super().__init__(host=host, port=port)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return _Handler
