# SynthOrg Memory. `make run` serves the app; `make test` runs the suite.
# Both work on a fresh clone with only python3 and make.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
STAMP  := $(VENV)/.installed

.PHONY: setup run test lint format worker bench clean-db bench-compare

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

worker: setup
	$(BIN)/python manage.py qcluster

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Mem0 side by side (bench/compare.py): optional dependencies in their own venv.
COMPARE_DATA ?= ../shared/bench-data/locomo_dev.json
bench-compare: setup
	@test -x .venv-compare/bin/python || $(PYTHON) -m venv .venv-compare
	.venv-compare/bin/python -m pip install --quiet -r requirements.txt -r bench/requirements-compare.txt
	.venv-compare/bin/python bench/compare.py --data $(COMPARE_DATA)
