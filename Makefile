# Two commands a newcomer needs: `make run` and `make test`. Everything installs into .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
STAMP := $(VENV)/.installed
# Three test processes (pytest-xdist), each with its own test database, on two cores: many tests wait (on a real
# worker, a server, a browser) rather than compute, and work stealing keeps the long ones from ending the run
# alone. PYTEST_ARGS= make test runs it in one process.
PYTEST_ARGS ?= -n 3 --dist worksteal

.PHONY: run test bench bench-scale bench-imports bench-webhooks lint fmt migrate worker beat install demo

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Reinstall only when the dependency list changes.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

migrate: $(STAMP)
	$(BIN)/python manage.py migrate --noinput

run: migrate
	$(BIN)/python manage.py collectstatic --noinput -v 0
	PORT=$(PORT) SERVER_URL_FILE=.server-url $(BIN)/gunicorn -c config/gunicorn.conf.py

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/run.py

bench-scale: $(STAMP)
	$(BIN)/python bench/scale.py

# An import of 100,000 referrals and 20,000 commissions (docs/import.md), into its own database.
bench-imports: $(STAMP)
	DATABASE_URL=$${BENCH_IMPORTS_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/svc_bench_imports} $(BIN)/python bench/imports_bench.py

# How many webhook deliveries a second one worker process sends, draining a backlog (docs/webhooks.md).
bench-webhooks: $(STAMP)
	$(BIN)/python bench/webhook_drain.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

fmt: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

worker: $(STAMP)
	$(BIN)/celery -A config worker -Q celery,webhooks -l info

beat: $(STAMP)
	$(BIN)/celery -A config beat -l info

demo: migrate
	$(BIN)/python manage.py demo
