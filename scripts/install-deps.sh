#!/usr/bin/env bash
# Makes sure the system libraries Tributary builds against are installed: libzmq (with pkg-config) and SQLite.
# As root it installs what is missing with apt; otherwise it prints the exact command to run.
set -euo pipefail
missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if ! pkg-config --exists libzmq 2>/dev/null; then missing+=(libzmq3-dev); fi
if [ ! -f /usr/include/sqlite3.h ]; then missing+=(libsqlite3-dev); fi
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
command="apt-get install -y ${missing[*]}"
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} with apt" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "Tributary needs ${missing[*]}. Run: sudo apt-get update && sudo $command" >&2
  exit 1
fi
