#!/usr/bin/env bash
# The whole suite, as CI runs it: lint, type check, migrations check, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# Quiet on success; on failure the errors are printed, then the suite stops.
.venv/bin/mypy --no-error-summary \
  || { echo "fleetscope: mypy found type errors (see above)" >&2; exit 1; }
SECRET_KEY=migrations-check .venv/bin/python manage.py makemigrations --check --dry-run >/dev/null \
  || { echo "fleetscope: models changed without a migration (run manage.py makemigrations)" >&2; exit 1; }
exec .venv/bin/python -m pytest "$@"
