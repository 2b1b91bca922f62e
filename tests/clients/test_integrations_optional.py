"""The framework integrations are optional: ``import synthorg_memory`` loads none of the
frameworks, and an integration whose framework is missing says which extra to install."""

import subprocess
import sys
from pathlib import Path

import pytest

CLIENT_SOURCE = Path(__file__).resolve().parents[2] / "clients" / "python" / "src"
FRAMEWORKS = ("langgraph", "langchain_core", "agents", "openai")


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(CLIENT_SOURCE)},
        check=False,
    )


def test_the_client_loads_no_framework():
    run = python(
        "import sys, synthorg_memory, synthorg_memory.models, synthorg_memory.resources\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({FRAMEWORKS!r})))"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("synthorg_memory.langgraph", "langgraph", "langgraph"),
        ("synthorg_memory.langchain", "langchain_core", "langchain"),
        ("synthorg_memory.agents", "agents", "agents"),
    ],
)
def test_a_missing_framework_names_its_extra(module, framework, extra):
    run = python(f"import sys\nsys.modules[{framework!r}] = None\nimport {module}")
    assert run.returncode == 1
    assert f'pip install "synthorg-memory[{extra}]"' in run.stderr
