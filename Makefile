# FleetScope: `make demo` runs the dashboard on a simulated fleet; `make test` runs the suite.
# Both install what is missing first, so they work on a fresh machine.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
STAMP := $(VENV)/.installed-stamp

.PHONY: install demo test lint format migrations-check clean

install: $(STAMP)

$(STAMP): pyproject.toml package-lock.json
	@scripts/ensure-venv.sh "$(PYTHON)" "$(VENV)"
	@scripts/ensure-js.sh
	@touch $(STAMP)

demo: install
	@PORT=$(PORT) scripts/demo.sh

test: install
	@scripts/ensure-system-deps.sh
	@scripts/test.sh

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

migrations-check: install
	SECRET_KEY=migrations-check $(PY) manage.py makemigrations --check --dry-run

clean:
	rm -rf $(VENV) node_modules var/static var/screenshots
