#!/usr/bin/env bash
# The embedded default: SQLite under var/, in-process scheduler, in-memory channel layer.
set -euo pipefail
cd "$(dirname "$0")/.."
var="${FLEETSCOPE_VAR_DIR:-$PWD/var}"
mkdir -p "$var/static"
# The settings of this demo (a per-checkout secret key, loopback scrapes allowed), written to
# $var/demo.env for the README's commands in another shell, and read here the same way.
scripts/demo-env.sh
set -a
# shellcheck disable=SC1091
. "$var/demo.env"
set +a
.venv/bin/python manage.py migrate --noinput >/dev/null
exec .venv/bin/python manage.py serve_embedded --demo --port "${PORT:-8000}"
