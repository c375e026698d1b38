#!/usr/bin/env bash
# Writes $FLEETSCOPE_VAR_DIR/demo.env (var/demo.env by default): the settings `make demo` runs
# with, so the README's commands work in another shell after `set -a; . var/demo.env; set +a`.
# Only the demo writes it; production settings never read anything from var/ on their own.
set -euo pipefail
cd "$(dirname "$0")/.."
var="${FLEETSCOPE_VAR_DIR:-$PWD/var}"
mkdir -p "$var"
var="$(cd "$var" && pwd)"
key_file="${SECRET_KEY_FILE:-$var/secret-key}"
if [ -z "${SECRET_KEY:-}" ] && [ -z "${SECRET_KEY_FILE:-}" ] && [ ! -s "$key_file" ]; then
  # A per-checkout key, made once: sessions survive demo restarts, nothing secret is committed.
  (umask 077; .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(50))' > "$key_file")
fi
{
  echo "# Written by make demo (scripts/demo-env.sh). Load it in a shell with:"
  echo "#   set -a; . var/demo.env; set +a"
  printf 'FLEETSCOPE_VAR_DIR=%q\n' "$var"
  # The demo fleet runs on this machine; production deployments list their networks instead.
  printf 'FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK=%q\n' "${FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK:-true}"
  # A SECRET_KEY given in the environment stays there: it is not copied into a file.
  if [ -z "${SECRET_KEY:-}" ]; then
    printf 'SECRET_KEY_FILE=%q\n' "$key_file"
  fi
} > "$var/demo.env.tmp"
mv "$var/demo.env.tmp" "$var/demo.env"
