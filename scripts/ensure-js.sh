#!/usr/bin/env bash
# The front-end files FleetScope serves from npm (package-lock.json): plotly.js's
# cartesian bundle. Without npm the pages fall back to the full bundle that ships with the
# plotly Python package (slower to start), and this says so.
set -euo pipefail
bundle=node_modules/plotly.js-cartesian-dist-min/plotly-cartesian.min.js
stamp=node_modules/.fleetscope-lock
if [ -f "$bundle" ] && [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "fleetscope: npm not found: serving plotly's full bundle (install Node.js and npm, then make install, for the cartesian bundle)" >&2
  exit 0
fi
echo "fleetscope: installing front-end files (npm ci: plotly.js cartesian bundle)"
npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
cp package-lock.json "$stamp"
