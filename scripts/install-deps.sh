#!/usr/bin/env bash
# Makes sure the system libraries Tributary builds against are installed: libzmq (with pkg-config) and SQLite.
# As root it installs what is missing with apt; otherwise it prints the exact command to run.
set -euo pipefail
missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if ! pkg-config --exists libzmq 2>/dev/null; then missing+=(libzmq3-dev); fi
if [ ! -f /usr/include/sqlite3.h ]; then missing+=(libsqlite3-dev); fi
exec "$(dirname "$0")/apt-install.sh" Tributary "${missing[@]}"
