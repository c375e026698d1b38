#!/usr/bin/env bash
# The embedded default: SQLite under var/, in-process scheduler, in-memory channel layer.
set -euo pipefail
cd "$(dirname "$0")/.."
var="${FLEETSCOPE_VAR_DIR:-$PWD/var}"
# The demo fleet runs on this machine; production deployments list their networks instead.
export FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK="${FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK:-true}"
mkdir -p "$var/static"
if [ -z "${SECRET_KEY:-}" ] && [ -z "${SECRET_KEY_FILE:-}" ]; then
  # A per-checkout key, made once: sessions survive demo restarts, nothing secret is committed.
  if [ ! -s "$var/secret-key" ]; then
    (umask 077; .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(50))' > "$var/secret-key")
  fi
  export SECRET_KEY_FILE="$var/secret-key"
fi
.venv/bin/python manage.py migrate --noinput >/dev/null
exec .venv/bin/python manage.py serve_embedded --demo --port "${PORT:-8000}"
