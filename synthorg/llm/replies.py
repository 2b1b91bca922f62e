"""Reading a model's reply the way models actually answer (pure: no Django import).

Models without a JSON mode (and some with one) wrap their answer: a reasoning block first
(``<think>…</think>``, as DeepSeek-R1, Qwen3 and QwQ emit through Ollama, vLLM without a
reasoning parser, llama.cpp or LM Studio), a line of prose ("Here is the JSON:"), a markdown
fence, a closing remark. Every feature reads replies through this module, so a reply shape
one provider produces is understood by every feature at once.

* :func:`reply_text` — the answer without reasoning blocks (plain-text replies: summaries,
  a reformulated query).
* :func:`reply_json` — the first JSON object or array in the answer: the whole answer,
  else the first fenced block that parses, else the first ``{``/``[`` where a complete JSON
  value starts. Raises :class:`ReplyFormatError` with a reason a user can act on.
"""

from __future__ import annotations

import json
import re
from typing import Any

_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)
_UNCLOSED_REASONING = re.compile(r"^\s*<(think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)```", re.DOTALL)

NOT_JSON = "the reply contains no JSON {kind}"
ONLY_REASONING = "the reply is a reasoning block with no answer after it"
TRUNCATED = "the reply was cut off at max_tokens (finish_reason: length) before its JSON ended"
#: how an error message names each JSON kind ``expect`` may ask for
_KIND_NAMES: dict[type, str] = {dict: "object", list: "array"}


class ReplyFormatError(ValueError):
    """A reply from which the expected answer cannot be read; ``str()`` says why."""


def reply_text(text: str | None) -> str:
    """``text`` without reasoning blocks, stripped. An unclosed reasoning block at the start
    (the model ran out of tokens while thinking) leaves nothing."""
    text = _REASONING.sub("", text or "")
    if _UNCLOSED_REASONING.match(text):
        return ""
    return text.strip()


def reply_json(
    text: str | None, *, truncated: bool = False, expect: type | tuple[type, ...] = (dict, list)
) -> Any:
    """The first JSON value of type ``expect`` (object or array) in ``text`` (see the module
    docstring): prose such as "see [1]" before the object is skipped when ``expect=dict``.

    ``truncated`` (the completion's ``finish_reason`` was ``length``) only changes the error
    message: a cut-off reply is reported as such rather than as "not JSON".
    """
    kinds = expect if isinstance(expect, tuple) else (expect,)
    not_json = NOT_JSON.format(kind=" or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds))
    answer = reply_text(text)
    if not answer:
        raise ReplyFormatError(
            TRUNCATED if truncated else (ONLY_REASONING if (text or "").strip() else not_json)
        )
    for read in (_whole, _fenced, _embedded):
        value = read(answer, expect)
        if value is not None:
            return value
    raise ReplyFormatError(TRUNCATED if truncated else not_json)


def _whole(answer: str, expect) -> Any:
    try:
        value = json.loads(answer)
    except ValueError:
        return None
    return value if isinstance(value, expect) else None


def _fenced(answer: str, expect) -> Any:
    for match in _FENCE.finditer(answer):
        language = match.group(1).lower()
        if language and language not in ("json", "jsonc", "javascript", "js"):
            continue
        body = match.group(2)
        value = _whole(body.strip(), expect)
        if value is None:
            value = _embedded(body, expect)
        if value is not None:
            return value
    return None


def _embedded(answer: str, expect) -> Any:
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[{\[]", answer):
        try:
            value, _end = decoder.raw_decode(answer, match.start())
        except ValueError:
            continue
        if isinstance(value, expect):
            return value
    return None
