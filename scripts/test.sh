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
# One worker process per core, at most four: a third of the suite's time is spent waiting
# on browsers, servers and subprocesses, which other workers use. Each worker has its own
# test database; a file's tests stay on one worker (their module fixtures are shared).
workers="${FLEETSCOPE_TEST_WORKERS:-$(nproc 2>/dev/null || echo 1)}"
if [ "$workers" -gt 4 ]; then workers=4; fi
exec .venv/bin/python -m pytest -n "$workers" --dist loadfile "$@"
