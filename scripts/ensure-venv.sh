#!/usr/bin/env bash
# Create the virtualenv with a Python >= 3.11 and install FleetScope with its test extras.
set -euo pipefail
python="$1"; venv="$2"
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "fleetscope: needs Python 3.11 or newer; '$python' is $("$python" --version 2>&1 || echo missing)" >&2
  exit 2
fi
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
started=$(date +%s)
echo "fleetscope: installing Python packages into $venv (the first time: about 2 minutes)"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# One line per package as pip collects it, so a first install is not two silent minutes;
# pip's errors go to stderr as they are.
set +e
"$venv/bin/python" -m pip install --progress-bar off -e '.[test]' \
  | grep --line-buffered -E '^(Collecting|Building|Installing collected)' \
  | cut -c1-100 | sed -u 's/^/  /'
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "fleetscope: installing Python packages failed (pip exited $status, see above)" >&2
  exit "$status"
fi
echo "fleetscope: Python packages installed in $(( $(date +%s) - started )) s"
