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
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -e '.[test]'
