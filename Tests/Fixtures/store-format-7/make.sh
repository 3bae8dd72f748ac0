#!/usr/bin/env bash
# Writes store.sqlite, a store of format 7 (before dependencies and schedules), for StoreUpgradeTests.
# It must run with binaries built from a commit that writes format 7, e.g. 9ddd2f8:
#   git worktree add /tmp/format7 9ddd2f8 && (cd /tmp/format7 && swift build)
#   Tests/Fixtures/store-format-7/make.sh /tmp/format7/.build/debug
# The store holds 200 users imported by 2 done jobs, 5 `report` jobs still queued (no worker runs that kind) and
# 1 dead import job (a row of the wrong type); format 7 adds a `report` job with the unique key `daily` in the queue
# `reports`.
set -euo pipefail
bin=${1:?usage: make.sh BIN_DIR (tributary-coordinator and tributary of format 7)}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
with open(f"{work}/users.ndjson", "w") as f:
    for i in range(200):
        f.write(json.dumps({"login": f"user{i}", "name": f"User {i}"}) + "\n")
with open(f"{work}/bad.ndjson", "w") as f:
    f.write(json.dumps({"login": 42}) + "\n")
PY
cat > "$work/model.json" <<'JSON'
{"entities": [{"name": "User", "attributes": [{"name": "login", "type": "string"},
  {"name": "name", "type": "string", "optional": true}], "uniqueness": [["login"]]}]}
JSON
"$bin/tributary-coordinator" --store "$work/store.sqlite" --model "$work/model.json" \
    --listen tcp://127.0.0.1:17420 --feed tcp://127.0.0.1:17421 --workers 1 >"$work/coordinator.log" 2>&1 &
coordinator=$!
until grep -q "ready" "$work/coordinator.log" 2>/dev/null; do sleep 0.2; done
"$bin/tributary" push import --entity User --file "$work/users.ndjson" --chunk 100 --wait --listen tcp://127.0.0.1:17420
"$bin/tributary" push import --entity User --file "$work/bad.ndjson" --wait --listen tcp://127.0.0.1:17420 || true
for i in 1 2 3 4 5; do
  "$bin/tributary" push job --kind report --argument n=$i --listen tcp://127.0.0.1:17420 >/dev/null
done
"$bin/tributary" push job --kind report --queue reports --unique-key daily --listen tcp://127.0.0.1:17420 >/dev/null
kill -TERM "$coordinator"
wait "$coordinator"
sqlite3 "$work/store.sqlite" VACUUM
cp "$work/store.sqlite" "$here/store.sqlite"
cp "$work/model.json" "$here/model.json"
