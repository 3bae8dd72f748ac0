#!/usr/bin/env bash
# What the tests use beyond the build: the Python packages of scripts/requirements-tests.txt and
# Tests/browser/requirements.txt (from PyPI), and Debian's chromium with its driver (for the dashboard's browser
# test). Installs what is missing (apt as root); otherwise prints the command to run.
set -euo pipefail
if ! python3 -c 'import jsonschema, prometheus_client, selenium' 2>/dev/null; then
  python3 -m pip install -q --disable-pip-version-check \
    -r scripts/requirements-tests.txt -r Tests/browser/requirements.txt
fi
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} with apt" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "The dashboard's browser test needs ${missing[*]}. Run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
