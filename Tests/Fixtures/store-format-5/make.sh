#!/usr/bin/env bash
# Writes store.sqlite, a store of format 5 (the layout before integer row keys), for StoreUpgradeTests.
# It must run with binaries built from a commit that writes format 5, e.g. b6a1a4d:
#   git worktree add /tmp/format5 b6a1a4d && (cd /tmp/format5 && swift build)
#   Tests/Fixtures/store-format-5/make.sh /tmp/format5/.build/debug
# users.ndjson and prs.ndjson are the rows (300 users, a quarter without a mentor; 2,500 pull requests whose authors
# and reviewers include 50 users the first file does not have, created by find-or-create).
set -euo pipefail
bin=${1:?usage: make.sh BIN_DIR (tributary-coordinator and tributary of format 5)}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/tributary-coordinator" --store "$work/store.sqlite" --model "$here/model.json" \
    --listen tcp://127.0.0.1:17400 --feed tcp://127.0.0.1:17401 --workers 2 >"$work/coordinator.log" 2>&1 &
coordinator=$!
until grep -q "ready" "$work/coordinator.log" 2>/dev/null; do sleep 0.2; done
"$bin/tributary" push import --entity User --file "$here/users.ndjson" --chunk 100 --wait --listen tcp://127.0.0.1:17400
"$bin/tributary" push import --entity PullRequest --file "$here/prs.ndjson" --chunk 250 --wait \
    --listen tcp://127.0.0.1:17400
kill -TERM "$coordinator"
wait "$coordinator"
sqlite3 "$work/store.sqlite" VACUUM
cp "$work/store.sqlite" "$here/store.sqlite"
