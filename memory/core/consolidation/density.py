"""Heuristic content-density classification (no LLM), deciding the archival mode.

Dense content (code, JSON/YAML, identifier lists, tables of numbers) loses its value when
paraphrased, so it is preserved extractively; sparse content (conversation, narrative) is
summarised. The score is a weighted sum of five signals, each in ``[0, 1]``:

======================  ======  ====================================================
signal                  weight  what it measures
======================  ======  ====================================================
code patterns           0.25    share of lines that look like code (keywords followed
                                by syntax, braces, statement endings, assignments)
structured data         0.20    share of lines that look like JSON/YAML/CSV/tables
identifier density      0.30    share of tokens shaped like identifiers (snake_case,
                                camelCase, dotted.paths, calls, paths, UUIDs, hex
                                hashes) — plain long words do not count
numeric density         0.05    share of tokens containing a digit
line structure          0.20    not laid out as prose: many short lines that are not
                                sentences, or text without English function words
======================  ======  ====================================================

Each share saturates (a text does not need to be 100% code to be code). DENSE when the
score ≥ ``dense_threshold``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory.core.consolidation.models import ContentDensity

DEFAULT_DENSE_THRESHOLD = 0.5

WEIGHTS = {
    "code": 0.25,
    "structured": 0.20,
    "identifiers": 0.30,
    "numeric": 0.05,
    "lines": 0.20,
}
# Share of lines/tokens at which a signal counts fully.
_SATURATION = {"code": 0.4, "structured": 0.5, "identifiers": 0.25, "numeric": 0.3}

_CODE_LINE = re.compile(
    r"""
    ^\s*(?:def|class|import|from\s+\S+\s+import|return|function|const|let|var|public|private|
          static|fn|func|package|\#include|SELECT|INSERT|UPDATE|DELETE|CREATE|if\s*\(|for\s*\(|
          while\s*\(|elif|else\s*:|try\s*:|except\b|catch\s*\()(?=[\s(:<]|$)
    | [;{}]\s*$                      # statement / block endings
    | ^\s*[}\])]                     # closing brackets
    | ^\s*[A-Za-z_][\w.\[\]]*\s*(?:=|\+=|-=|:=)\s*\S   # assignment
    | \w\([^()]*\)\s*(?:->|:|\{|;|$) # call or signature
    | =>|->|::|&&|\|\|
    """,
    re.VERBOSE,
)
_STRUCTURED_LINE = re.compile(
    r"""
    ^\s*"[^"]+"\s*:                  # JSON key
    | ^\s*[\[{]\s*$ | ^\s*[\]}],?\s*$  # JSON brackets
    | ^\s*-\s+[\w"'-]+\s*:            # YAML list of mappings
    | ^\s*[A-Za-z_][\w.-]*\s*:\s*\S{0,60}$  # YAML key: short value
    | ^\s*[A-Za-z_][\w.-]*\s*=\s*\S   # key=value
    | ^\s*\|.*\|\s*$                  # table row
    | ^[^,\n]+(?:,[^,\n]+){3,}$      # CSV with ≥4 columns
    """,
    re.VERBOSE,
)
_TOKEN = re.compile(r"\S+")
_IDENTIFIER = re.compile(
    r"""
    ^(?:
        [a-z][a-z0-9]*(?:_[a-z0-9]+)+            # snake_case
      | [A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+            # SCREAMING_CASE
      | [a-z]+[0-9]*(?:[A-Z][a-z0-9]*)+          # camelCase
      | (?:[A-Z][a-z0-9]+){2,}                   # PascalCase (two humps at least)
      | [A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)+(?:\(\))?  # dotted.path
      | [\w.-]*/[\w./-]+                         # path or URL part
      | [0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}  # UUID
      | (?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,64}    # hex hash
      | [A-Za-z]+[-_]?[0-9]+[A-Za-z0-9-]*        # ticket-ish: ABC-123, v2, x86_64
      | (?=\S*[._/:=(\[])\w+(?:[._/:=()\[\]'"]+\w+)+[)\]'"]*  # obj.call(x), a[b], k=v
    )$
    """,
    re.VERBOSE,
)
_STRIP = "\"'`,;:()[]{}<>!?"
_SENTENCE_END = re.compile(r"[.!?…]\s*$")
_FUNCTION_WORDS_TEXT = (
    "a an the and or but if of to in on at by for with from as is are was were be been it "
    "this that these those we i you he she they not no so then than there here have has had "
    "do does did will would can could should about into over after before because"
)
_FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_TEXT.split())
# A share of function words at or above this reads as prose.
_PROSE_FUNCTION_SHARE = 0.2


class DensityClassifier:
    """Classifies text as :attr:`ContentDensity.DENSE` or :attr:`ContentDensity.SPARSE`."""

    def __init__(self, dense_threshold: float = DEFAULT_DENSE_THRESHOLD) -> None:
        if not 0.0 <= dense_threshold <= 1.0:
            raise ValueError(f"dense_threshold must be within [0, 1], got {dense_threshold}")
        self.dense_threshold = dense_threshold

    def signals(self, content: str) -> dict[str, float]:
        lines = [line for line in content.splitlines() if line.strip()]
        tokens = [t.strip(_STRIP) for t in _TOKEN.findall(content)]
        tokens = [t for t in tokens if t]
        if not lines or not tokens:
            return dict.fromkeys(WEIGHTS, 0.0)
        code = sum(1 for line in lines if _CODE_LINE.search(line)) / len(lines)
        structured = sum(1 for line in lines if _STRUCTURED_LINE.search(line)) / len(lines)
        identifiers = sum(1 for t in tokens if _IDENTIFIER.match(t)) / len(tokens)
        numeric = sum(1 for t in tokens if any(ch.isdigit() for ch in t)) / len(tokens)
        return {
            "code": min(1.0, code / _SATURATION["code"]),
            "structured": min(1.0, structured / _SATURATION["structured"]),
            "identifiers": min(1.0, identifiers / _SATURATION["identifiers"]),
            "numeric": min(1.0, numeric / _SATURATION["numeric"]),
            "lines": max(_line_structure(lines), _non_prose(tokens)),
        }

    def score(self, content: str) -> float:
        signals = self.signals(content)
        return round(sum(WEIGHTS[name] * value for name, value in signals.items()), 6)

    def classify(self, content: str) -> ContentDensity:
        dense = self.score(content) >= self.dense_threshold
        return ContentDensity.DENSE if dense else ContentDensity.SPARSE

    def classify_batch(self, contents: Sequence[str]) -> tuple[ContentDensity, ...]:
        return tuple(self.classify(content) for content in contents)

    def majority(self, contents: Sequence[str]) -> ContentDensity:
        """The group's density by majority vote; a tie is SPARSE (summarise)."""
        densities = self.classify_batch(contents)
        dense = sum(1 for d in densities if d is ContentDensity.DENSE)
        return ContentDensity.DENSE if dense * 2 > len(densities) else ContentDensity.SPARSE


def _non_prose(tokens: list[str]) -> float:
    """1 for text without English function words (lists, code), 0 for running prose."""
    if len(tokens) < 4:
        return 0.0
    share = sum(1 for t in tokens if t.lower() in _FUNCTION_WORDS) / len(tokens)
    return max(0.0, 1.0 - share / _PROSE_FUNCTION_SHARE)


def _line_structure(lines: list[str]) -> float:
    """High for many short, non-sentence lines; 0 for a paragraph of prose."""
    if len(lines) < 3:
        return 0.0
    short = sum(1 for line in lines if len(line.strip()) <= 60) / len(lines)
    not_sentences = sum(1 for line in lines if not _SENTENCE_END.search(line)) / len(lines)
    return short * not_sentences
