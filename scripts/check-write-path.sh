#!/usr/bin/env bash
# One write path: once the store is open, only the writer (Sources/Shared/Coordinator/Writer/) opens a write
# transaction on it. Fails, naming file:line, on code elsewhere in Sources that does (GRDB's write entry points,
# a transaction or savepoint of its own, or the writer's transaction helper). RootStore.swift opens, creates,
# upgrades and closes the file before and after the writer runs; the fuzz harness applies change sets to a scratch
# store of its own; the bench's baselines write files of their own through SQLite's C API. Usage:
# check-write-path.sh [sources dir]
set -euo pipefail
sources=${1:-Sources}
pattern='\b(pool|queue|dbQueue|dbPool)\.write[[:space:]]*[({]|\.(writeWithoutTransaction|asyncWrite|asyncWriteWithoutTransaction|barrierWriteWithoutTransaction|asyncBarrierWriteWithoutTransaction)\b|\bdb\.(inTransaction|inSavepoint)\b|statements\.(transaction|savepoint)\(|"(BEGIN|SAVEPOINT)( |")'
found=$(grep -rnE "$pattern" "$sources" --include='*.swift' \
  | grep -v "^$sources/Shared/Coordinator/Writer/" \
  | grep -v "^$sources/Shared/Coordinator/Store/RootStore.swift:" \
  | grep -v "^$sources/Shared/Fuzz/" \
  | grep -v "^$sources/bench/" \
  | grep -vE '^[^:]+:[0-9]+:[[:space:]]*///?' || true)
# The check can fail: the writer itself does open write transactions.
if ! grep -rqE "$pattern" "$sources/Shared/Coordinator/Writer" --include='*.swift'; then
  echo "write path: no write transaction found even in Coordinator/Writer: is the pattern still right?" >&2
  exit 1
fi
if [ -n "$found" ]; then
  echo "write path: only Coordinator/Writer writes the store; these open a write transaction elsewhere:" >&2
  echo "$found" >&2
  exit 1
fi
echo "write path: every write transaction on the store is opened in Coordinator/Writer"
