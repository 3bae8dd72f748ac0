#!/usr/bin/env bash
# The layering Package.swift sets up, read from the built binaries: the worker, the CLI and the sample worker link
# neither GRDB nor SQLite nor the coordinator's libraries nor Hummingbird (docs/architecture.md). Usage: check-layers.sh [build dir]
set -euo pipefail
dir=${1:-.build/debug}
forbidden='GRDB|TributaryCoordinator|TributaryHTTP|Hummingbird|sqlite3_'
status=0
for binary in tributary-worker tributary triage-worker; do
  found=$(nm "$dir/$binary" | grep -E "$forbidden" || true)
  if [ -n "$found" ]; then
    echo "layers: $binary links code it must not (GRDB, SQLite or the coordinator):" >&2
    head -5 <<<"$found" >&2
    status=1
  fi
done
# The check can fail: the coordinator does link what the others must not.
if [ "$(nm "$dir/tributary-coordinator" | grep -cE "$forbidden" || true)" -eq 0 ]; then
  echo "layers: no GRDB or coordinator symbol found even in tributary-coordinator: is nm reading symbols?" >&2
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "layers: tributary-worker, tributary and triage-worker link no GRDB, SQLite or coordinator code"
fi
exit "$status"
