"""Benchmark figures live on the benchmark pages, not in the product's comments.

A docstring or comment of the product packages keeps the decision and a pointer
(``measured: docs/benchmarks/<page>.md#<anchor>``); the figure itself (a recall, a latency,
a speed ratio, a before → after) is on the page, where ``bench/report.py`` writes it from the
results or a dated note says which script measured it. A figure left in the code goes stale
unseen: the page is regenerated, the comment is not.

The scan reads every comment and every string statement (module, class, function and
attribute docstrings) of ``synthorg/``, ``memory/``, ``orgmemory/`` and ``persistence/``
(migrations excluded). Numbers that are not measurements (defaults, limits, formulas) do not
match the patterns; one that does and is not a benchmark figure goes into ``ALLOWED`` with
its reason.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("synthorg", "memory", "orgmemory", "persistence")
BENCHMARK_PAGES = ROOT / "docs" / "benchmarks"

_NUM = r"\d+(?:[.,]\d+)*"
#: What a measured figure looks like, matched in one comment block or docstring with its
#: whitespace collapsed (so a figure split over two lines still matches).
FIGURE_PATTERNS = {
    "a duration in ms or µs": rf"(?<![\w.]){_NUM}\s?(?:ms|µs)\b",
    "fractional seconds": r"(?<![\w.])\d+\.\d+\s?s\b",
    "a speed ratio": rf"(?<![\w.]){_NUM}\s?[×x]\s?(?:faster|slower|the|as|more|less|fewer)\b",
    "a recall or similarity figure": (
        r"(?i)\b(?:recall|ndcg|any@|all@|mrr|cosine)\S*[^.;]{0,40}?(?<![\w.])[01]\.\d{2,}"
    ),
    "a percentile figure": r"(?i)\bp(?:50|95|99)\b[^.;]{0,20}\d",
    "a number after 'measured'": r"(?i)\bmeasur\w*[^.;]{0,60}?(?<![\w.@])\d[\d.,]*",
    "a throughput": (
        rf"(?<![\w.]){_NUM}\s?(?:req|requests|embeddings|memories|rows|texts|turns|searches)/s\b"
    ),
    "a before → after figure": rf"(?<![\w.@]){_NUM}\s?(?:→|->)\s?{_NUM}",
    "a time something took or cost": (
        r"(?i)\b(?:took|takes|paid|pays?|costs?)\b[^.;]{0,60}?(?<![\w.])"
        r"\d+(?:\.\d+)?\s?(?:s|min|ms|µs)\b"
    ),
}
_FIGURES = {name: re.compile(pattern) for name, pattern in FIGURE_PATTERNS.items()}

#: (file, text the match contains) → why it is not a benchmark figure. Keep it short.
ALLOWED: dict[tuple[str, str], str] = {
    ("synthorg/llm/resolution.py", "takes ≤ 1 min"): "the model-discovery cache's TTL, a bound",
}

#: A pointer to a benchmark page from the code.
POINTER = re.compile(r"docs/benchmarks/([a-z0-9_-]+\.md)(?:#([A-Za-z0-9_-]+))?")


def _blocks(source: str) -> Iterator[tuple[int, str]]:
    """``(first line, text)`` of every comment block (consecutive comment lines joined) and
    every string statement of ``source``."""
    run: list[str] = []
    start = previous = 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        line = token.start[0]
        text = token.string.lstrip("#").removeprefix(":").strip()
        if run and previous == line - 1:
            run.append(text)
        else:
            if run:
                yield start, " ".join(run)
            run, start = [text], line
        previous = line
    if run:
        yield start, " ".join(run)
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            yield node.lineno, node.value.value


def _product_files(root: Path) -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def figures_in(text: str) -> list[tuple[str, str]]:
    """``(pattern name, matched text)`` for every figure in one comment block or docstring."""
    flat = " ".join(text.split())
    return [(name, m.group(0)) for name, rx in _FIGURES.items() for m in rx.finditer(flat)]


def figures_in_code(root: Path = ROOT) -> list[str]:
    """Every figure in the product's comments and docstrings under ``root``, as
    ``path:line: [pattern] text`` (allowed ones left out)."""
    found = []
    for path in _product_files(root):
        relative = path.relative_to(root).as_posix()
        for line, text in _blocks(path.read_text()):
            for name, match in figures_in(text):
                if any(f == relative and snippet in match for f, snippet in ALLOWED):
                    continue
                found.append(f"{relative}:{line}: [{name}] {match}")
    return found


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's ``toc`` gives a heading (its default ``slugify``)."""
    text = re.sub(r"`|\*\*|__", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def page_anchors(page: Path) -> set[str]:
    """The heading anchors of a Markdown page (fenced code skipped; ``{#id}`` honoured)."""
    anchors: set[str] = set()
    fenced = False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not heading:
            continue
        explicit = re.search(r"\{[^}]*#([\w-]+)[^}]*\}\s*$", heading.group(1))
        anchors.add(explicit.group(1) if explicit else _slug(heading.group(1)))
    return anchors


# --- the rule ----------------------------------------------------------------------------


def test_no_benchmark_figure_in_the_products_comments_or_docstrings():
    found = figures_in_code()
    assert not found, (
        "benchmark figures in product comments/docstrings: keep the decision and a pointer "
        "(measured: docs/benchmarks/<page>.md#<anchor>) and put the figure on that page's "
        "template in bench/report_templates/ (or add it to ALLOWED with why it is no "
        "benchmark figure):\n" + "\n".join(found)
    )


def test_every_benchmark_pointer_in_the_code_names_a_page_and_an_anchor_it_has():
    pages = {page.name: page_anchors(page) for page in BENCHMARK_PAGES.glob("*.md")}
    broken = []
    pointers = 0
    for path in _product_files(ROOT):
        for line, text in _blocks(path.read_text()):
            for page, anchor in POINTER.findall(" ".join(text.split())):
                pointers += 1
                where = f"{path.relative_to(ROOT).as_posix()}:{line}"
                if page not in pages:
                    broken.append(f"{where}: docs/benchmarks/{page} does not exist")
                elif anchor and anchor not in pages[page]:
                    broken.append(f"{where}: docs/benchmarks/{page} has no heading #{anchor}")
    assert pointers, "no product comment points at a benchmark page"
    assert not broken, "benchmark pointers that lead nowhere:\n" + "\n".join(broken)


# --- the patterns, on figures the code carried and on numbers that are no figure ------------


@pytest.mark.parametrize(
    "text",
    [
        "for a search response that was ≈ 0.9 ms of the ≈ 2 ms its serialization cost",
        "PostgreSQL's 128 MB default cost a 10k-row exact scan 248 ms;",
        "it needs ≈ 0.55× the CPU time per text with the same dev recall",
        "its vectors differ slightly (mean cosine ≈ 0.99), so they carry",
        "measured 19-23 → 41 embeddings/s with 8 threads on 2 busy cores",
        "instead of unnesting every lexeme (measured 1.5x faster in the memory sparse leg).",
        "the queryset machinery: measured 1.2 ms instead of 2.5 ms for 10 rows).",
        "pruned too\n#: (recall any@10 0.817 → 0.808), at 0.5 0.813, at 0.8 0.816",
        "a bitmap costs ≈ 0.1 µs per scope row (400k rows: 41 ms)",
        "(measured:\n# 65,000 Dice computations for 300 LoCoMo turns probing longest terms first)",
        "INSERT (measured: 1.0 s of a 3.1 s store of 300 LoCoMo turns",
        "every stop took the whole grace, one cluster after the other (34 s with a 15 s grace)",
        "The first search would otherwise pay the ~1 s model load",
        "Walks at 200 / 400 / 700 / 1000 (recall@10, 30 queries): a part of 40 % 0.88 / 0.92",
        "hybrid search p50 20 ms / p95 30 ms including the query embedding",
    ],
)
def test_a_figure_the_code_carried_is_found(text):
    assert figures_in(text), text


@pytest.mark.parametrize(
    "text",
    [
        "Okapi BM25 reference math (k1 = 1.2, b = 0.75, Lucene's non-negative idf).",
        "between 128 MB and 8 GB",
        "gives up connecting after 3 s, so a dead host costs one short wait per recheck.",
        "30 s × 4^(attempts − 1): 30 s, 2 min, 8 min, 32 min; five attempts",
        "(``SYNTHORG_LLM['TOTAL_TIMEOUT']``, 120 s by default) plus :data:`LEASE_MARGIN`.",
        "the linear default 0.3 under ``rrf`` (where min_relevance thresholds the",
        "gain this × the best fused score (0 = off; measured: docs/benchmarks/retrieval.md)",
        "384-dim float32 vectors: 2,048 entries hold ≈ 3 MiB per process.",
        "recall@k and nDCG@k of ranking each query's scope by cosine similarity",
        "paraphrases score ~0.5–0.8, unrelated sentences ~0.0–0.2",
    ],
)
def test_a_number_that_is_no_figure_is_not(text):
    assert not figures_in(text), figures_in(text)


def test_headings_give_the_anchors_mkdocs_gives():
    page = BENCHMARK_PAGES / "operations.md"
    assert "stopping-make-run" in page_anchors(page)
    assert "write-path" in page_anchors(page)
    assert "row-layout-ab" in page_anchors(BENCHMARK_PAGES / "latency.md")
    assert "the-sparse-legs-scope-bitmap-or-filter" in page_anchors(BENCHMARK_PAGES / "scale.md")
