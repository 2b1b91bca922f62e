# SynthOrg Memory. `make run` serves the app; `make test` runs the suite.
# Both work on a fresh clone with only python3 and make.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
STAMP  := $(VENV)/.installed

.PHONY: setup run test lint format worker bench clean-db browser

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

test: setup browser
	$(BIN)/python -m pytest

# The console's browser tests drive Debian's chromium through chromium-driver (selenium).
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(echo "installing chromium + chromium-driver for the browser tests" && \
		apt-get update -q && apt-get install -y -q chromium chromium-driver)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
