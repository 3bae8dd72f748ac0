#!/usr/bin/env bash
# Writes store.sqlite, a store of format 8 (relationship indexes as SQLite indexes: `<Entity>_by_<relationship>`
# and `<join>_by_destination`), for StoreUpgradeTests. It uses the model and rows of store-format-5 (300 users, a
# quarter without a mentor; 2,500 pull requests whose authors and reviewers include 50 users the first file does not
# have, created by find-or-create).
# It must run with binaries built from a commit that writes format 8, e.g. f17a326:
#   git worktree add /tmp/format8 f17a326 && (cd /tmp/format8 && swift build)
#   Tests/Fixtures/store-format-8/make.sh /tmp/format8/.build/debug
set -euo pipefail
bin=${1:?usage: make.sh BIN_DIR (tributary-coordinator and tributary of format 8)}
here=$(cd "$(dirname "$0")" && pwd)
rows="$here/../store-format-5"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/tributary-coordinator" --store "$work/store.sqlite" --model "$rows/model.json" \
    --listen tcp://127.0.0.1:17430 --feed tcp://127.0.0.1:17431 --workers 2 >"$work/coordinator.log" 2>&1 &
coordinator=$!
until grep -q "ready" "$work/coordinator.log" 2>/dev/null; do sleep 0.2; done
"$bin/tributary" push import --entity User --file "$rows/users.ndjson" --chunk 100 --wait --listen tcp://127.0.0.1:17430
"$bin/tributary" push import --entity PullRequest --file "$rows/prs.ndjson" --chunk 250 --wait \
    --listen tcp://127.0.0.1:17430
kill -TERM "$coordinator"
wait "$coordinator"
sqlite3 "$work/store.sqlite" VACUUM
cp "$work/store.sqlite" "$here/store.sqlite"
cp "$rows/model.json" "$here/model.json"
