#!/usr/bin/env bash
# The coordinator's shape (docs/architecture.md): the ZeroMQ router (CoordinatorServer) runs the loop, decodes,
# calls the parts it composes (WorkerSessions, CommitAnswers, PeerReplies, the handlers through ClientCodec) and
# encodes, in at most 25 methods over a dozen pieces of state; the request handlers and the HTTP endpoint take and
# return domain values, no protobuf type (only ClientCodec, the ZeroMQ edge, names one); RootStore keeps opening,
# schema, upgrade and closing, the job and feed SQL living in their stores. Fails naming what is over its bound.
# Usage: check-shape.sh [sources dir]
set -euo pipefail
sources=${1:-Sources}
server_dir="$sources/Shared/Coordinator/Server"
server="$server_dir/CoordinatorServer.swift"
handlers="$sources/Shared/Coordinator/Handlers"
http="$sources/Shared/HTTP"
# Stored properties: `let`/`var` declarations at the actor's top level without a `{` getter.
stored=$(grep -cE '^    (public |private |package |nonisolated |private\(set\) )*(let|var) [A-Za-z_]+[^{]*$' "$server" || true)
# Methods: `func` declarations of the actor and its extensions (CoordinatorServer.swift, CoordinatorServer+*.swift).
methods=$(cat "$server" "$server_dir"/CoordinatorServer+*.swift | grep -cE '^    ([a-z()]+ )*func ' || true)
rootstore=$(cat "$sources"/Shared/Coordinator/Store/RootStore*.swift | wc -l)
status=0
if [ "$stored" -gt 12 ]; then
  echo "shape: CoordinatorServer.swift declares $stored stored properties; at most 12 (move state to a type it owns)" >&2
  status=1
fi
if [ "$stored" -eq 0 ] || [ "$methods" -eq 0 ]; then
  echo "shape: no stored property or method found in $server: is the pattern still right?" >&2
  status=1
fi
if [ "$methods" -gt 25 ]; then
  echo "shape: CoordinatorServer declares $methods methods; at most 25 (a handler, WorkerSessions or CommitAnswers does the rest)" >&2
  status=1
fi
if [ ! -d "$handlers" ]; then
  echo "shape: no $handlers: is the layout still right?" >&2
  status=1
fi
if named=$(grep -ln 'Tributary_V1_' "$handlers"/*.swift "$http"/*.swift 2>/dev/null); then
  echo "shape: these handler or HTTP files name protobuf types (ClientCodec is the ZeroMQ edge): $named" >&2
  status=1
fi
if local=$(grep -ln "LocalPeers\|server.request(" "$http"/*.swift 2>/dev/null); then
  echo "shape: these HTTP files reach the router's peers rather than the handlers: $local" >&2
  status=1
fi
if [ "$rootstore" -gt 800 ]; then
  echo "shape: the RootStore*.swift files hold $rootstore lines; at most 800 (job and feed SQL go to their stores)" >&2
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "shape: CoordinatorServer has $stored stored properties (at most 12) and $methods methods (at most 25);" \
    "handlers and HTTP name no protobuf type; RootStore*.swift $rootstore lines (at most 800)"
fi
exit "$status"
