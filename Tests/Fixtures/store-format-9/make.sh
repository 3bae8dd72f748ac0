#!/usr/bin/env bash
# Writes store.sqlite, a store of format 9 (the history keyed by AUTOINCREMENT, its (job_id, batch_index) index over
# every record, and contexts' save ids in one table with an index by age), for StoreUpgradeTests. It uses the model
# and rows of store-format-5 (users and pull requests imported by jobs), then one batch update from the CLI: a
# context's save, whose id and answer are in the save-id log.
# It must run with binaries built from a commit that writes format 9, e.g. 6c05b9f:
#   git worktree add /tmp/format9 6c05b9f && (cd /tmp/format9 && swift build)
#   Tests/Fixtures/store-format-9/make.sh /tmp/format9/.build/debug
set -euo pipefail
bin=${1:?usage: make.sh BIN_DIR (tributary-coordinator and tributary of format 9)}
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
"$bin/tributary" update --entity User --where 'login == "user1"' --set 'name=Renamed' --listen tcp://127.0.0.1:17430
kill -TERM "$coordinator"
wait "$coordinator"
sqlite3 "$work/store.sqlite" VACUUM
cp "$work/store.sqlite" "$here/store.sqlite"
cp "$rows/model.json" "$here/model.json"
