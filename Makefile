# The two commands a fresh machine needs: `make run` and `make test` (see README).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test setup system-deps services lint format messages bench clean-var

PORT ?= 8000
ADDR ?= 127.0.0.1

run: setup ## Embedded default: SQLite, filesystem broker, simulated hardware, demo data (PORT=8001 for another port)
	DJANGO_DEBUG=1 $(PY) manage.py migrate --noinput
	DJANGO_DEBUG=1 $(PY) manage.py seed_demo
	DJANGO_DEBUG=1 $(PY) manage.py run_embedded --addr $(ADDR) --port $(PORT)

# pytest-xdist: one process per core, at most 7 (each takes two of Redis's 16 databases,
# portal/settings/test_environment.py); each on a test database created afresh (no --reuse-db here).
TEST_WORKERS ?= auto
test: setup services ## Lint and the whole test suite against PostgreSQL and Redis
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-logo
	@# mypy runs beside pytest (its output comes first); either failing fails make test.
	$(VENV)/bin/mypy & types=$$!; \
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --maxprocesses=7 --dist=worksteal --create-db; tests=$$?; \
	wait $$types; checked=$$?; \
	if [ $$checked -ne 0 ]; then echo "make test: mypy failed (see its output above)" >&2; fi; \
	[ $$tests -eq 0 ] && [ $$checked -eq 0 ]

setup: system-deps $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q '.[dev]'
	@touch $(STAMP)

system-deps:
	@scripts/system_deps.sh

services:
	@scripts/ensure_services.sh

lint: ## ruff, import-linter's contracts and mypy (what make test runs before pytest)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-logo
	$(VENV)/bin/mypy

format:
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

messages: ## Re-extract and compile the translations (zh-Hans, en)
	DJANGO_DEBUG=1 $(PY) manage.py makemessages -l zh_Hans -l en --ignore '.venv/*' --ignore 'bench/*' --ignore 'tests/*'
	DJANGO_DEBUG=1 $(PY) manage.py compilemessages --ignore '.venv/*'

bench: setup services ## Benchmarks; each prints one JSON object as its last line
	$(PY) bench/availability.py
	$(PY) bench/pricing.py
	$(PY) bench/quote_pdf.py
	$(PY) bench/ordering.py
	$(PY) bench/catalog.py
	$(PY) bench/provisioning.py
	$(PY) bench/operations.py
	$(PY) bench/day2.py
	$(PY) bench/multihost.py

clean-var:
	rm -rf var
