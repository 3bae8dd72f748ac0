#!/usr/bin/env bash
# Writes store.sqlite, a store of format 6 (before named queues), for StoreUpgradeTests.
# It must run with binaries built from a commit that writes format 6, e.g. da410b7:
#   git worktree add /tmp/format6 da410b7 && (cd /tmp/format6 && swift build)
#   Tests/Fixtures/store-format-6/make.sh /tmp/format6/.build/debug
# The store holds 200 users imported by 2 done jobs, 5 `report` jobs still queued (no worker runs that kind) and
# 1 dead import job (a row of the wrong type).
set -euo pipefail
bin=${1:?usage: make.sh BIN_DIR (tributary-coordinator and tributary of format 6)}
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
    --listen tcp://127.0.0.1:17410 --feed tcp://127.0.0.1:17411 --workers 1 >"$work/coordinator.log" 2>&1 &
coordinator=$!
until grep -q "ready" "$work/coordinator.log" 2>/dev/null; do sleep 0.2; done
"$bin/tributary" push import --entity User --file "$work/users.ndjson" --chunk 100 --wait --listen tcp://127.0.0.1:17410
"$bin/tributary" push import --entity User --file "$work/bad.ndjson" --wait --listen tcp://127.0.0.1:17410 || true
for i in 1 2 3 4 5; do
  "$bin/tributary" push job --kind report --argument n=$i --listen tcp://127.0.0.1:17410 >/dev/null
done
kill -TERM "$coordinator"
wait "$coordinator"
sqlite3 "$work/store.sqlite" VACUUM
cp "$work/store.sqlite" "$here/store.sqlite"
cp "$work/model.json" "$here/model.json"
