#!/usr/bin/env python3
"""End-to-end check of worker.py against a real coordinator and a Swift worker.

    test_worker.py COORDINATOR_BINARY WORKER_BINARY TEMP_DIR

Starts `tributary-coordinator` on free ports (port `*`, read back from its `ready` line) with a store and model in
TEMP_DIR, this directory's worker.py (`py-import` jobs) and one `tributary-worker` (built-in `import` jobs), then:

1. pushes py-import and import jobs at the same time (users of both kinds overlapping, pull requests of both kinds
   whose authors come from both) and waits until every job is done;
2. pushes a py-import job with a malformed row: it must be dead with "line N: ..." and no retry;
3. pushes a long py-import job of rows without a uniqueness key, sends worker.py SIGTERM while it runs: worker.py
   must finish it, say goodbye and exit 0, and every row must be in the store exactly once;
4. kills (SIGKILL) a second worker.py (200 ms heartbeats) mid-job: the coordinator must re-queue the job once the
   heartbeats lapse, a third worker.py must resume it after its committed batches, and no row may be doubled;
5. checks the store after each step with its own SQLite connection: every row exactly once, the right authors and
   names;
6. edits one user with `pusher.py --edit` (a save without a job): the row changes, at the seq it printed, and no
   user is added.

Waits are bounded polls (no sleep stands in for synchronisation). Prints what it saw; exit status 0 when every
check passed, 1 with a message naming the failed check otherwise (and the tail of each process's log).
"""

import argparse
import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import zmq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "generated"))
try:
    import tributary_pb2 as pb
except ImportError:
    sys.exit("tributary_pb2 not found: run ./generate.sh first (see README.md)")

SIGNATURE = b"TRB1"
TIMEOUT_S = 60           # each wait below gives up after this long
POLL_S = 0.05

MODEL = {"entities": [
    {"name": "User", "attributes": [{"name": "login", "type": "string"},
                                     {"name": "name", "type": "string", "optional": True}],
     "uniqueness": [["login"]]},
    {"name": "PullRequest", "attributes": [{"name": "number", "type": "int"}, {"name": "title", "type": "string"}],
     "relationships": [{"name": "author", "destination": "User"}],
     "uniqueness": [["number"]]},
    # No uniqueness: a batch applied twice would show as duplicate rows.
    {"name": "Event", "attributes": [{"name": "n", "type": "int"}, {"name": "label", "type": "string"}]},
]}


class CheckFailed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def say(message):
    print(message, flush=True)


def wait_for(what, predicate, timeout=TIMEOUT_S):
    """Polls predicate() until it returns something truthy; fails naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise CheckFailed(f"timed out after {timeout} s waiting for {what}")
        time.sleep(POLL_S)


def ndjson(rows):
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


class Processes:
    """The processes this check starts, their logs, and their cleanup."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.running = {}  # name -> (Popen, log path)

    def start(self, name, argv, stdout=None):
        log_path = self.tmp / f"{name}.log"
        log = open(log_path, "ab")
        try:
            process = subprocess.Popen(argv, stdout=stdout if stdout else log, stderr=log, stdin=subprocess.DEVNULL)
        except OSError as error:
            raise CheckFailed(f"cannot start {name} ({argv[0]}): {error.strerror}") from None
        self.running[name] = (process, log_path)
        return process

    def stop_all(self):
        for name, (process, _) in self.running.items():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for name, (process, _) in self.running.items():
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def tails(self, lines=15):
        for name, (_, log_path) in self.running.items():
            try:
                text = log_path.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                continue
            print(f"--- last lines of {log_path}", file=sys.stderr)
            for line in text:
                print(f"    {line}", file=sys.stderr)


def start_coordinator(processes, binary, tmp):
    """Starts the coordinator on free ports; returns its jobs endpoint from the `ready` line on standard output."""
    store, model = tmp / "store.sqlite", tmp / "model.json"
    model.write_text(json.dumps(MODEL))
    process = processes.start("coordinator", [binary, "--store", str(store), "--model", str(model),
                                              "--listen", "tcp://127.0.0.1:*", "--feed", "tcp://127.0.0.1:*",
                                              "--http", "off"], stdout=subprocess.PIPE)
    ready = threading.Event()
    lines = []

    def read_stdout():  # keeps reading, so the pipe never fills
        for raw in process.stdout:
            lines.append(raw.decode(errors="replace").strip())
            if lines[-1].startswith("tributary-coordinator ready "):
                ready.set()

    threading.Thread(target=read_stdout, daemon=True).start()
    wait_for("the coordinator's ready line", lambda: ready.is_set() or process.poll() is not None, 30)
    check(ready.is_set(), f"the coordinator exited with status {process.poll()} before it was ready")
    fields = dict(f.split("=", 1) for f in lines[-1].split()[2:])  # ready jobs=… feed=… store=…
    return fields["jobs"], store


class Client:
    """Requests on the coordinator's jobs/control socket (as pusher.py does)."""

    def __init__(self, context, endpoint):
        self.socket = context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(endpoint)
        self.last_id = 0

    def request(self, **body):
        self.last_id += 1
        self.socket.send_multipart([SIGNATURE, pb.Envelope(request_id=self.last_id, **body).SerializeToString()])
        deadline = time.monotonic() + 10
        while True:
            remaining = int((deadline - time.monotonic()) * 1000)
            check(remaining > 0 and self.socket.poll(remaining), "the coordinator did not answer within 10 s")
            frames = self.socket.recv_multipart()
            reply = pb.Envelope.FromString(frames[1])
            if reply.request_id != self.last_id:
                continue
            if reply.WhichOneof("body") == "error":
                raise CheckFailed(f"the coordinator refused a request: {pb.ErrorCode.Name(reply.error.code)}: "
                                  f"{reply.error.message}")
            return reply

    def push(self, specs):
        return self.request(push_jobs=pb.PushJobs(jobs=specs)).push_reply

    def batch_status(self, batch):
        return self.request(batch_status_request=pb.BatchStatusRequest(batch=batch)).batch_status_reply

    def job(self, job_id):
        return self.request(job_request=pb.JobRequest(job_id=job_id)).job_info

    def workers(self):
        return self.request(status_request=pb.StatusRequest()).status_reply.workers

    def wait_batch(self, batch):
        def finished():
            status = self.batch_status(batch)
            return status if status.done_jobs + status.dead_jobs + status.cancelled_jobs >= status.total_jobs else None
        return wait_for(f"batch {batch} to finish", finished)


def users(prefix, first, count):
    return [{"login": f"{prefix}{i}", "name": f"{prefix.upper()} {i}"} for i in range(first, first + count)]


def run(args):
    tmp = Path(args.temp_dir).resolve()
    tmp.mkdir(parents=True, exist_ok=True)
    processes = Processes(tmp)
    context = zmq.Context()
    try:
        endpoint, store = start_coordinator(processes, args.coordinator, tmp)
        say(f"coordinator ready: jobs={endpoint} store={store}")
        py_worker = processes.start("py-worker", [sys.executable, str(HERE / "worker.py"), "--listen", endpoint,
                                                  "--name", "py-worker", "--concurrency", "2", "--batch-rows", "100"])
        processes.start("swift-worker", [args.worker, "--connect", endpoint, "--name", "swift-worker",
                                         "--concurrency", "2"])
        client = Client(context, endpoint)
        names = wait_for("both workers to register",
                         lambda: {w.name for w in client.workers()} >= {"py-worker", "swift-worker"} and
                         sorted(f"{w.worker_id}={w.name}" for w in client.workers()))
        say(f"workers registered: {' '.join(names)}")

        # 1. py-import and import jobs at once. Users: p1… by py-import, s1… by import, o1… by both.
        jobs, rows_per_job = 6, 400
        specs, kinds = [], []
        for j in range(jobs):
            for kind, prefix in (("py-import", "p"), ("import", "s")):
                rows = users(prefix, j * rows_per_job + 1, rows_per_job) + users("o", j * 20 + 1, 20)
                specs.append(pb.JobSpec(kind=kind, payload=ndjson(rows), arguments={"entity": "User"},
                                        total=len(rows)))
                kinds.append(kind)
        authors = [f"p{i}" for i in range(1, 60)] + [f"s{i}" for i in range(1, 60)] + [f"new{i}" for i in range(9)]
        for j in range(jobs):
            for k, kind in enumerate(("py-import", "import")):
                first = (2 * j + k) * rows_per_job + 1
                rows = [{"number": n, "title": f"PR {n}", "author": {"login": authors[n % len(authors)]}}
                        for n in range(first, first + rows_per_job)]
                specs.append(pb.JobSpec(kind=kind, payload=ndjson(rows), arguments={"entity": "PullRequest"},
                                        total=len(rows)))
                kinds.append(kind)
        started = time.monotonic()
        pushed = client.push(specs)
        status = client.wait_batch(pushed.batch)
        say(f"mixed batch: {status.done_jobs} done, {status.dead_jobs} dead of {status.total_jobs} jobs "
            f"({status.done_rows}/{status.total_rows} rows) in {time.monotonic() - started:.2f} s")
        check(status.dead_jobs == 0, "dead jobs in the mixed batch: " +
              "; ".join(f"job {d.job_id}: {d.message}" for d in status.dead))
        check(status.done_jobs == len(specs), f"{status.done_jobs} of {len(specs)} jobs done")
        for job_id, kind in zip(pushed.job_ids, kinds):
            info = client.job(job_id)
            check(info.kind == kind and info.state == "done" and info.done == info.total,
                  f"job {job_id} ({kind}): state {info.state}, {info.done}/{info.total}")

        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)  # a separate connection to the store file
        count, logins, named = db.execute("SELECT count(*), count(DISTINCT login), count(name) FROM User").fetchone()
        expected_users = 2 * jobs * rows_per_job + jobs * 20 + 9
        say(f"users: {count} rows, {logins} distinct logins, {named} with a name (expected {expected_users})")
        check(count == logins == expected_users, f"User has {count} rows / {logins} logins, not {expected_users}")
        check(named == expected_users - 9, f"{named} users have a name, expected {expected_users - 9}")
        wrong_names = db.execute("SELECT count(*) FROM User WHERE name IS NOT NULL AND name != upper(substr(login, "
                                 "1, 1)) || ' ' || substr(login, 2)").fetchone()[0]
        check(wrong_names == 0, f"{wrong_names} users have the wrong name")
        pulls = db.execute("SELECT p.number, u.login FROM PullRequest p LEFT JOIN User u ON u._rowid = p.author "
                           "ORDER BY p.number").fetchall()
        expected_numbers = list(range(1, 2 * jobs * rows_per_job + 1))
        wrong_authors = [(n, login) for n, login in pulls if login != authors[n % len(authors)]]
        say(f"pull requests: {len(pulls)} rows, {len(wrong_authors)} with the wrong author")
        check([n for n, _ in pulls] == expected_numbers,
              f"PullRequest numbers are not exactly 1…{len(expected_numbers)} once each")
        check(not wrong_authors, f"wrong authors, e.g. {wrong_authors[:3]}")

        # 2. A malformed row: the job is dead at once (permanent), naming the line; rows before it stay.
        bad = b'{"login": "bad1"}\n\n{"login": "bad2"}\n{"login": 42}\n{"login": "bad3"}\n'
        pushed = client.push([pb.JobSpec(kind="py-import", payload=bad, arguments={"entity": "User",
                                                                                   "batch_size": "2"})])
        status = client.wait_batch(pushed.batch)
        check(status.dead_jobs == 1 and len(status.dead) == 1, f"the malformed job is not dead: {status}")
        dead = status.dead[0]
        say(f"malformed row: job {dead.job_id} dead after {dead.attempts} attempt(s): {dead.message}")
        check(dead.attempts == 1, "a malformed row was retried (the failure should be permanent)")
        check(dead.message.startswith("line 4:") and "login" in dead.message,
              f"the error does not name line 4 and the attribute: {dead.message!r}")
        kept = [r[0] for r in db.execute("SELECT login FROM User WHERE login LIKE 'bad%' ORDER BY login")]
        check(kept == ["bad1", "bad2"], f"the batch before the bad row should stay committed, got {kept}")

        # 3. SIGTERM while a long job runs: worker.py finishes it, says goodbye, exits 0; nothing lost or doubled.
        events = 30_000
        payload = ndjson({"n": n, "label": f"event {n}"} for n in range(events))
        job_id = client.push([pb.JobSpec(kind="py-import", payload=payload, arguments={"entity": "Event"},
                                         total=events)]).job_ids[0]
        info = wait_for(f"job {job_id} to make progress",
                        lambda: (lambda i: i if i.done > 0 or i.state == "done" else None)(client.job(job_id)))
        mid_job, done_at_signal = info.state == "running", info.done
        py_worker.send_signal(signal.SIGTERM)
        try:
            status = py_worker.wait(TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise CheckFailed(f"worker.py did not exit within {TIMEOUT_S} s of SIGTERM") from None
        info = client.job(job_id)
        say(f"SIGTERM {'mid-job' if mid_job else 'after the job (it was quick)'} at {done_at_signal}/{events} "
            f"rows: worker.py exited with status {status}; job {job_id} is {info.state} "
            f"(attempt {info.attempt}, {info.done}/{info.total})")
        check(status == 0, f"worker.py exited with status {status} after SIGTERM, not 0")
        check(info.state == "done" and info.attempt == 1,
              f"the job running at SIGTERM should be finished by the draining worker: {info.state}, attempt "
              f"{info.attempt}")
        count, distinct = db.execute("SELECT count(*), count(DISTINCT n) FROM Event").fetchone()
        say(f"events: {count} rows, {distinct} distinct (expected {events})")
        check(count == distinct == events, f"Event has {count} rows, {distinct} distinct, not {events}")
        gone = wait_for("worker.py to leave the coordinator's worker list",
                        lambda: "py-worker" not in {w.name for w in client.workers()} or None, 10)
        check(gone, "worker.py still registered")

        # 4. kill -9 mid-job: the coordinator forgets the silent worker (3 heartbeats of 200 ms), re-queues the job,
        #    and another worker.py resumes it after its committed batches, without applying any batch twice.
        victim = processes.start("py-worker-2", [sys.executable, str(HERE / "worker.py"), "--listen", endpoint,
                                                 "--name", "py-worker-2", "--batch-rows", "100",
                                                 "--heartbeat-ms", "200"])
        payload = ndjson({"n": n, "label": f"event {n}"} for n in range(events, 2 * events))
        job_id = client.push([pb.JobSpec(kind="py-import", payload=payload, arguments={"entity": "Event"},
                                         total=events)]).job_ids[0]
        info = wait_for(f"job {job_id} to make progress",
                        lambda: (lambda i: i if i.done > 0 or i.state == "done" else None)(client.job(job_id)))
        victim.kill()
        victim.wait()
        killed_at = client.job(job_id)
        processes.start("py-worker-3", [sys.executable, str(HERE / "worker.py"), "--listen", endpoint,
                                        "--name", "py-worker-3", "--batch-rows", "100"])
        info = wait_for(f"job {job_id} to be done",
                        lambda: (lambda i: i if i.state in ("done", "dead") else None)(client.job(job_id)))
        say(f"kill -9 at {killed_at.done}/{events} rows ({killed_at.state}): job {job_id} is {info.state} after "
            f"attempt {info.attempt}; errors: {[e.message for e in info.errors]}")
        check(info.state == "done", f"job {job_id} is {info.state}")
        if killed_at.state == "running":
            # (attempt ≥ 2 rather than == 2: on a loaded machine the 200 ms heartbeats may lapse once before the kill)
            check(info.attempt >= 2 and any("lost" in e.message for e in info.errors),
                  f"the killed attempt should count as lost and a later attempt finish (attempt {info.attempt}, "
                  f"errors {[e.message for e in info.errors]})")
            # The worker logs it when the completing save's ack arrives, which may be after the job reads as done.
            resumed = wait_for("py-worker-3 to log that it resumed the job after its committed batches",
                               lambda: [line for line in (tmp / "py-worker-3.log").read_text().splitlines()
                                        if f"job {job_id} " in line and "resumed after" in line])
            say(f"py-worker-3: {resumed[0]}")
        count, distinct = db.execute("SELECT count(*), count(DISTINCT n) FROM Event").fetchone()
        say(f"events: {count} rows, {distinct} distinct (expected {2 * events})")
        check(count == distinct == 2 * events, f"Event has {count} rows, {distinct} distinct, not {2 * events}")

        # 6. pusher.py --edit: one object's change saved without a job, merged into the user by its login.
        login, = db.execute("SELECT login FROM User ORDER BY login LIMIT 1").fetchone()
        users_before, = db.execute("SELECT count(*) FROM User").fetchone()
        edited = subprocess.run([sys.executable, str(HERE / "pusher.py"), "--listen", endpoint, "--edit", "User",
                                 "--set", f"login={json.dumps(login)}", "--set", 'name="Edited from Python"'],
                                capture_output=True, text=True, timeout=TIMEOUT_S)
        say(f"pusher.py --edit: {edited.stdout.strip()} {edited.stderr.strip()}")
        check(edited.returncode == 0 and edited.stdout.startswith("saved as seq "), "pusher.py --edit failed")
        seq = int(edited.stdout.split()[3])
        name, version = db.execute("SELECT name, _version FROM User WHERE login = ?", (login,)).fetchone()
        users_after, = db.execute("SELECT count(*) FROM User").fetchone()
        check(name == "Edited from Python" and version == seq, f"user {login}: name {name!r}, version {version}")
        check(users_after == users_before, f"the edit added a user ({users_before} → {users_after})")
        say("PASS")
        return 0
    except CheckFailed as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        processes.tails()
        return 1
    finally:
        context.destroy(linger=0)
        processes.stop_all()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("coordinator", help="path of the tributary-coordinator binary")
    parser.add_argument("worker", help="path of the tributary-worker binary")
    parser.add_argument("temp_dir", help="a directory for the store, the model and the processes' logs")
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
