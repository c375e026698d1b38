#!/usr/bin/env bash
# The whole suite, as CI runs it: lint, migrations check, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
SECRET_KEY=migrations-check .venv/bin/python manage.py makemigrations --check --dry-run >/dev/null \
  || { echo "fleetscope: models changed without a migration (run manage.py makemigrations)" >&2; exit 1; }
exec .venv/bin/python -m pytest "$@"
