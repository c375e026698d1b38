#!/usr/bin/env bash
# The suite drives a real Prometheus, promtool and headless Chromium. Install the
# Debian packages when they are missing and apt is usable; otherwise say what to install.
set -euo pipefail
missing=()
command -v prometheus >/dev/null || missing+=(prometheus)
command -v promtool >/dev/null || missing+=(prometheus)
command -v chromium >/dev/null || missing+=(chromium chromium-driver)
[ ${#missing[@]} -eq 0 ] && exit 0
packages=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
sudo=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo="sudo"
if command -v apt-get >/dev/null && { [ "$(id -u)" -eq 0 ] || [ -n "$sudo" ]; }; then
  echo "fleetscope: installing Debian packages: $packages"
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $packages >/dev/null
else
  echo "fleetscope: the test suite needs these Debian packages: $packages (apt-get install $packages)" >&2
  exit 2
fi
