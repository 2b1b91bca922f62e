"""The committed benchmark pages are what bench/report.py writes from the committed JSON."""

from pathlib import Path

from bench import report


def test_benchmark_pages_match_the_results():
    generated = report.pages()
    assert generated, "bench/report_templates/ holds no page"
    for name, text in generated.items():
        committed = Path(report.OUT, name)
        assert committed.exists(), f"docs/benchmarks/{name} is missing: run bench/report.py"
        assert committed.read_text() == text, (
            f"docs/benchmarks/{name} is stale: run python bench/report.py and commit it"
        )


def test_no_stray_benchmark_page():
    committed = {p.name for p in Path(report.OUT).glob("*.md")}
    assert committed == set(report.pages()), "a docs/benchmarks page has no template"


def test_every_results_file_has_a_command():
    rows = report.t_commands(None)
    assert "| `—` |" not in rows, "a results file records no command and has none in COMMANDS"
