"""The TypeScript client cannot drift from the API: its types (``clients/typescript/src/
schema.ts``) are openapi-typescript's output for the OpenAPI schema the server serves, and
every resource method names its endpoint, members and answer through them, so the client
compiles only against the API as it is. The build committed in ``dist/`` is the sources'.

After an API change: ``make ts-client-types`` regenerates ``schema.ts`` and rebuilds
``dist/``."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "typescript"
MODULES = CLIENT / "node_modules"
REGENERATE = "make ts-client-types"


def npm_bin(package: str, script: str) -> list[str]:
    node = shutil.which("node")
    assert node is not None, "node (20 or later) checks the TypeScript client"
    path = MODULES / package / script
    assert path.exists(), f"{path} is missing: `make test` installs it (npm ci in {CLIENT})"
    return [node, str(path)]


def run(command: list[str], cwd: Path = CLIENT) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def generate_types(schema_file: Path, out: Path) -> str:
    """openapi-typescript with the options of package.json's ``types`` script."""
    npm_bin("openapi-typescript", "bin/cli.js")  # installed
    npm = shutil.which("npm")
    assert npm is not None, "npm runs the TypeScript client's scripts"
    done = run([npm, "run", "--silent", "types", "--", str(schema_file), "-o", str(out)])
    assert done.returncode == 0, done.stderr
    return out.read_text()


@pytest.fixture(scope="module")
def served_schema(tmp_path_factory):
    """The served schema as `manage.py spectacular` writes it (what REGENERATE runs)."""
    path = tmp_path_factory.mktemp("openapi") / "openapi.json"
    call_command("spectacular", "--format", "openapi-json", "--file", str(path))
    return path


def tsc(*args: str, cwd: Path = CLIENT) -> subprocess.CompletedProcess:
    return run([*npm_bin("typescript", "bin/tsc"), "-p", "tsconfig.json", *args], cwd=cwd)


def test_the_generated_types_are_those_of_the_served_schema(served_schema, tmp_path):
    generated = generate_types(served_schema, tmp_path / "schema.ts")
    committed = (CLIENT / "src" / "schema.ts").read_text()
    assert generated == committed, f"the API changed: run `{REGENERATE}` and commit"


def test_the_client_compiles_against_its_types():
    checked = tsc("--noEmit")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_typescript_caller_gets_the_types_and_is_refused_undeclared_members():
    """test/consumer.ts imports the package by name (dist/'s declarations) and marks the calls
    the API would refuse ``@ts-expect-error``: compiling it fails if one of them compiles."""
    checked = run([*npm_bin("typescript", "bin/tsc"), "-p", "test/tsconfig.json"])
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_committed_build_is_the_sources(tmp_path):
    built = tsc("--outDir", str(tmp_path))
    assert built.returncode == 0, built.stdout + built.stderr
    fresh = {path.name: path.read_text() for path in tmp_path.iterdir()}
    committed = {path.name: path.read_text() for path in (CLIENT / "dist").iterdir()}
    assert sorted(committed) == sorted(fresh)
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert stale == [], f"dist/ is not the sources' build: run `{REGENERATE}` and commit"


def test_an_api_change_the_client_relies_on_stops_it_compiling(served_schema, tmp_path):
    """The regression the check exists for: the API drops a path and a field the client uses
    (memory history; a search hit's ``combined``); types regenerated from that schema no
    longer compile with the client's sources."""
    schema = json.loads(served_schema.read_text())
    del schema["paths"]["/api/v1/memories/{id}/history"]
    hit = schema["components"]["schemas"]["SearchHit"]
    del hit["properties"]["combined"]
    hit["required"].remove("combined")
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(schema))
    copy = tmp_path / "client"
    shutil.copytree(CLIENT / "src", copy / "src")
    shutil.copy(CLIENT / "tsconfig.json", copy)
    (copy / "node_modules").symlink_to(MODULES)
    generate_types(changed, copy / "src" / "schema.ts")

    checked = tsc("--noEmit", cwd=copy)

    assert checked.returncode != 0
    errors = re.findall(r"^(src/\S+?)\(\d+,\d+\): error (TS\d+)", checked.stdout, re.M)
    by_file = {file: [line for line in checked.stdout.splitlines() if line.startswith(file)]
               for file, _ in errors}  # fmt: skip
    assert sorted(by_file) == ["src/resources.ts", "src/types.ts"], checked.stdout
    assert any("Property 'combined' does not exist" in line for line in by_file["src/resources.ts"])
    assert any('"/api/v1/memories/{id}/history"' in line for line in by_file["src/resources.ts"])
    assert all('"/api/v1/memories/{id}/history"' in line for line in by_file["src/types.ts"])


def test_the_package_has_no_runtime_dependencies():
    package = json.loads((CLIENT / "package.json").read_text())
    assert "dependencies" not in package
    assert (package["type"], package["exports"]["."]["import"]) == ("module", "./dist/index.js")
    statement = re.compile(r"^(?:import|export)\b[^;]*?from \"([^\"]+)\"", re.M)
    for path in (CLIENT / "dist").glob("*.js"):
        imported = statement.findall(path.read_text())
        assert all(name.startswith("./") for name in imported), (path.name, imported)
