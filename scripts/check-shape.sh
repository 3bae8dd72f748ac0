#!/usr/bin/env bash
# The coordinator's shape (docs/architecture.md): the router keeps about a dozen pieces of state, the rest owned by
# the types it composes (RouterIO, WriterHandOver, Intake, WorkerRegistry, PipelineAnswers, CoordinatorParts); RootStore keeps opening,
# schema, upgrade and closing, the job and feed SQL living in their stores. Fails naming the count over its bound.
# Usage: check-shape.sh [sources dir]
set -euo pipefail
sources=${1:-Sources}
server="$sources/Shared/Coordinator/Server/CoordinatorServer.swift"
# Stored properties: `let`/`var` declarations at the actor's top level without a `{` getter.
stored=$(grep -cE '^    (public |private |package |nonisolated |private\(set\) )*(let|var) [A-Za-z_]+[^{]*$' "$server" || true)
rootstore=$(cat "$sources"/Shared/Coordinator/Store/RootStore*.swift | wc -l)
status=0
if [ "$stored" -gt 12 ]; then
  echo "shape: CoordinatorServer.swift declares $stored stored properties; at most 12 (move state to a type it owns)" >&2
  status=1
fi
if [ "$stored" -eq 0 ]; then
  echo "shape: no stored property found in $server: is the pattern still right?" >&2
  status=1
fi
if [ "$rootstore" -gt 800 ]; then
  echo "shape: the RootStore*.swift files hold $rootstore lines; at most 800 (job and feed SQL go to their stores)" >&2
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "shape: CoordinatorServer has $stored stored properties (at most 12); RootStore*.swift $rootstore lines (at most 800)"
fi
exit "$status"
