#!/usr/bin/env python3
"""A stand-in for the coordinator's HTTP side, to develop and check the dashboard without building Swift.

    fake_coordinator.py [--port 0] [--dead-job 9] [--token TOKEN [--protect-reads]] [--without-queues]

Serves Sources/Shared/HTTP/Dashboard/ (read on every request, so edits show at once) at /, /dashboard.css and
/dashboard.js, and fakes the coordinator's API: GET /api/dashboard, GET /api/events (a snapshot a second),
POST /api/jobs/ID/retry, POST /api/jobs/ID/cancel and DELETE /api/jobs/ID. An import runs all the time: rows
and jobs move every second, and a retried dead job is queued, runs and is done a few seconds later.

Jobs wait in three named queues, served as a coordinator's workers would with `--queues default,imports`, plus
`reports`, which only gets a job every REPORT_EVERY seconds: `default` catches up within a minute, `imports` lags
(amber on the page), `reports` has waited for more than ten minutes (red). With --without-queues the snapshots
have no `queues` and no job has a `queue`, as from a coordinator older than named queues.

With --token, the actions need `Authorization: Bearer TOKEN`; with --protect-reads too, so do /api/dashboard
and /api/events (which also take `?token=TOKEN`), as the coordinator's do from beyond loopback. Prints
`listening on http://127.0.0.1:PORT/` once it listens, and runs until it is interrupted.
"""
import argparse
import http.server
import json
import math
import pathlib
import random
import re
import sys
import threading
import time
import urllib.parse

DASHBOARD = pathlib.Path(__file__).resolve().parents[2] / "Sources" / "Shared" / "HTTP" / "Dashboard"
FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/dashboard.css": ("dashboard.css", "text/css; charset=utf-8"),
    "/dashboard.js": ("dashboard.js", "text/javascript; charset=utf-8"),
}
ROWS_PER_JOB = 10_000
ROWS_PER_TICK = 2_500  # each running job's progress a second
RUNNING_AT_MOST = 4
SERVED_QUEUES = ("default", "imports")  # the workers' --queues, in order
REPORT_EVERY = 40  # seconds between two jobs of the `reports` queue starting


class Fake:
    """The coordinator's state, moved along by tick() once a second."""

    def __init__(self, dead_job, with_queues=True):
        self.lock = threading.Lock()
        self.with_queues = with_queues
        self.rng = random.Random(7)
        now = time.time()
        self.jobs = {}
        self.next_id = 1
        self.rows_committed = 10 * ROWS_PER_JOB  # the ten done jobs below
        self.jobs_done = 10
        self.commits = 100
        self.last_seq = 1_000
        self.rates = []
        for index in range(300, 0, -1):  # five minutes of history, so the chart has something to show
            wave = 0.6 + 0.4 * math.sin(index / 40.0)
            self.rates.append({"time": math.floor(now) - index, "rowsPerSecond": round(10_000 * wave, 1),
                               "jobsPerSecond": round(wave + self.rng.uniform(-0.3, 0.3), 2)})
        other_dead = 12 if dead_job != 12 else 13
        self.next_id = max(dead_job, other_dead) + 1
        for batch, queue, count, oldest in (("demo-1", "default", 40, 120), ("pulls-2025-11", "imports", 25, 400)):
            for _ in range(count):
                self.add_job(batch, now - self.rng.uniform(5, oldest), queue)
        for age in (900, 820, 760, 700):
            self.add_job("reports-nightly", now - age, "reports")
        self.next_report = now + REPORT_EVERY / 2
        self.next_report_added = now + REPORT_EVERY * 1.5
        jobs = list(self.jobs.values())
        for job in jobs[:10]:
            job["state"], job["done"], job["attempt"], job["attemptsCounted"] = "done", ROWS_PER_JOB, 1, 1
        jobs[10]["state"] = "cancelled"
        for job in jobs[11:14]:
            job["state"], job["attempt"], job["attemptsCounted"], job["worker"] = "running", 1, 1, "w-1"
        jobs[20]["runAt"], jobs[20]["attempt"], jobs[20]["attemptsCounted"] = now + 45, 1, 1
        self.dead(dead_job, "demo-1", "default", now, [
            "row 17: <b>title</b> is not text (\"null\") & <script>alert(1)</script>",
            "row 17: the value of `title` is null, but the model says it is text; "
            "fix the source or declare it optional",
        ])
        self.dead(other_dead, "pulls-2025-11", "imports", now - 200,
                  ["entity \"Review\" is unknown to the model; " * 4])

    def add_job(self, batch, created, queue):
        job_id = self.next_id
        self.next_id += 1
        self.jobs[job_id] = {"id": job_id, "kind": "import", "queue": queue, "batch": batch, "state": "queued",
                             "attempt": 0, "attemptsCounted": 0, "maxAttempts": 3, "createdAt": created,
                             "updatedAt": created, "runAt": None, "done": 0, "total": ROWS_PER_JOB, "worker": None, "errors": []}
        return self.jobs[job_id]

    def dead(self, job_id, batch, queue, now, messages):
        """Adds the dead job job_id with one failed attempt per message."""
        self.jobs[job_id] = {"id": job_id, "kind": "import", "queue": queue, "batch": batch, "state": "dead",
                             "attempt": len(messages), "maxAttempts": len(messages),
                             "attemptsCounted": len(messages), "createdAt": now - 900,
                             "updatedAt": now - 90, "runAt": None, "done": 0, "total": ROWS_PER_JOB, "worker": None,
                             "errors": [{"attempt": index + 1, "message": message,
                                         "at": now - 90 - 30 * (len(messages) - index - 1)}
                                        for index, message in enumerate(messages)]}

    def tick(self):
        with self.lock:
            now = time.time()
            rows = jobs = 0
            for job in self.jobs.values():
                if job["state"] != "running":
                    continue
                step = min(ROWS_PER_TICK + self.rng.randint(-500, 500), job["total"] - job["done"])
                job["done"] += step
                rows += step
                if job["done"] >= job["total"]:
                    job["state"], job["worker"], job["updatedAt"] = "done", None, now
                    jobs += 1
            self.rows_committed += rows
            self.jobs_done += jobs
            self.commits += max(1, rows // 1_000)
            self.last_seq += rows
            workers = ["w-1", "w-2"]
            running = sum(1 for job in self.jobs.values() if job["state"] == "running")
            # `reports` gets one job now and then, before the others; then the served queues in order, each oldest
            # due job first.
            for name in (("reports",) if now >= self.next_report else ()) + SERVED_QUEUES:
                for job in sorted((job for job in self.queue() if job["queue"] == name and due(job, now)),
                                  key=lambda job: (due_since(job), job["id"])):
                    if running >= RUNNING_AT_MOST:
                        break
                    job.update(state="running", attempt=job["attempt"] + 1, attemptsCounted=job["attemptsCounted"] + 1,
                               worker=workers[job["id"] % 2],
                               updatedAt=now, runAt=None)
                    running += 1
                    if name == "reports":
                        self.next_report = now + REPORT_EVERY
                        break
            if self.rng.random() < 0.5:  # a trickle into `default`, which the workers serve first
                self.add_job("demo-1", now, "default")
            if sum(1 for job in self.jobs.values() if job["state"] == "queued" and job["queue"] == "imports") < 8:
                for _ in range(10):
                    self.add_job("pulls-2025-11", now, "imports")
            if now >= self.next_report_added:
                self.add_job("reports-nightly", now, "reports")
                self.next_report_added = now + REPORT_EVERY * 1.5
            self.rates.append({"time": math.floor(now), "rowsPerSecond": float(rows), "jobsPerSecond": float(jobs)})
            del self.rates[:-600]

    def recent(self):
        """The snapshot's `recent`: the rates over the last minute of samples (one a second), or over all of them."""
        last = self.rates[-60:]
        seconds = float(len(last))
        return {"seconds": seconds,
                "rowsPerSecond": sum(sample["rowsPerSecond"] for sample in last) / seconds if last else 0.0,
                "jobsPerSecond": sum(sample["jobsPerSecond"] for sample in last) / seconds if last else 0.0}

    def queue(self):
        return sorted((job for job in self.jobs.values() if job["state"] == "queued"),
                      key=lambda job: (job["runAt"] or 0, job["id"]))

    def queues(self, now):
        """The snapshot's `queues`: each queue with queued jobs, by name, with how long the job at its head waited."""
        queues = {}
        for job in self.queue():
            queue = queues.setdefault(job["queue"], {"name": job["queue"], "queued": 0, "latencySeconds": 0})
            queue["queued"] += 1
            if due(job, now):
                queue["latencySeconds"] = max(queue["latencySeconds"], round(now - due_since(job), 3))
        return [queues[name] for name in sorted(queues)]

    def snapshot(self):
        with self.lock:
            now = time.time()
            by_state = {state: [] for state in ("queued", "running", "done", "dead", "cancelled")}
            for job in self.jobs.values():
                by_state[job["state"]].append(job)
            batches = {}
            for job in self.jobs.values():
                batch = batches.setdefault(job["batch"], {"batch": job["batch"], "totalJobs": 0, "doneJobs": 0,
                                                          "deadJobs": 0, "cancelledJobs": 0, "totalRows": 0,
                                                          "doneRows": 0})
                batch["totalJobs"] += 1
                batch["totalRows"] += job["total"]
                batch["doneRows"] += job["done"] if job["state"] in ("running", "done") else 0
                key = {"done": "doneJobs", "dead": "deadJobs", "cancelled": "cancelledJobs"}.get(job["state"])
                if key:
                    batch[key] += 1
            workers = [
                {"workerId": "w-1", "name": "host-a:4242", "pid": 4242, "state": "ready", "secondsSinceHeartbeat": 0.4},
                {"workerId": "w-2", "name": "host-b:5151", "pid": 5151, "state": "ready", "secondsSinceHeartbeat": 1.2},
                {"workerId": "w-3", "name": "host-c:<i>6161</i>", "pid": 6161, "state": "lost",
                 "secondsSinceHeartbeat": 14.0 + now % 60},
            ]
            snapshot = {
                "time": now,
                "ready": True,
                "store": {"path": "/var/lib/tributary/store.sqlite", "bytes": 123_456_789 + self.rows_committed * 180,
                          "walBytes": 4_194_304},
                "feed": {"lastSeq": self.last_seq, "oldestSeq": 1},
                "jobs": {state: len(jobs) for state, jobs in by_state.items()},
                "totals": {"rowsCommitted": self.rows_committed, "jobsDone": self.jobs_done, "commits": self.commits},
                "rates": list(self.rates),
                "recent": self.recent(),
                "batches": sorted(batches.values(), key=lambda batch: batch["batch"]),
                "workers": workers,
                "running": [job_json(job) for job in sorted(by_state["running"], key=lambda job: job["id"])][:50],
                "dead": [job_json(job) for job in sorted(by_state["dead"], key=lambda job: -job["updatedAt"])][:50],
                "queued": [job_json(job) for job in self.queue()][:50],
                "subscribers": [
                    {"name": "search-indexer", "position": self.last_seq - 34, "updatedAt": now},
                    {"name": "audit-log", "position": self.last_seq, "updatedAt": now},
                ],
                "queues": self.queues(now),
            }
            if not self.with_queues:  # a coordinator older than named queues
                del snapshot["queues"]
                for job in snapshot["running"] + snapshot["dead"] + snapshot["queued"]:
                    del job["queue"]
            return snapshot

    def act(self, method, job_id, action):
        """(status, body) for an action on a job."""
        with self.lock:
            job = self.jobs.get(job_id)
            if job is None:
                return 404, error("UNKNOWN_JOB", f"job {job_id} does not exist")
            if method == "DELETE":
                if job["state"] not in ("done", "dead", "cancelled"):
                    return 409, error("JOB_NOT_FINISHED", f"job {job_id} is {job['state']}: only a finished job "
                                                          "can be deleted")
                del self.jobs[job_id]
            elif action == "retry":
                if job["state"] != "dead":
                    return 409, error("JOB_NOT_DEAD", f"job {job_id} is {job['state']}: only a dead job is retried")
                job.update(state="queued", attemptsCounted=0, runAt=None, done=0, updatedAt=time.time())
            elif action == "cancel":
                if job["state"] not in ("queued", "running"):
                    return 409, error("JOB_NOT_ACTIVE", f"job {job_id} is {job['state']}: only a queued or running "
                                                        "job can be cancelled")
                job.update(state="cancelled", worker=None, updatedAt=time.time())
            else:
                return 404, error("NOT_FOUND", "no such action")
            return 200, {key: value for key, value in job.items() if key != "errors"}


def job_json(job):
    """A job as the coordinator's JSON writes it (`JobInfo`): `jobId`, `workerId` ("" when none), `runAt` 0 for at
    once."""
    keys = ("kind", "queue", "batch", "attempt", "attemptsCounted", "maxAttempts", "done", "total", "createdAt",
            "updatedAt", "errors")
    json = {key: job[key] for key in keys if key in job}
    json.update(jobId=job["id"], workerId=job.get("worker") or "", runAt=job.get("runAt") or 0,
                state=job["state"])
    return json


def due(job, now):
    """Whether a queued job may run now (a retry waits for its runAt)."""
    return job["runAt"] is None or job["runAt"] <= now


def due_since(job):
    """When a queued job became due: its runAt, else when it was queued (made, or retried)."""
    return job["runAt"] if job["runAt"] is not None else job["updatedAt"]


def error(code, message):
    return {"error": {"code": code, "message": message}}


def make_handler(fake, token, protect_reads):
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "fake-tributary"

        def log_message(self, format, *args):  # one line per request on stderr, without the default's noise
            sys.stderr.write("fake coordinator: " + (format % args) + "\n")

        def send(self, status, body, content_type):
            data = body if isinstance(body, bytes) else body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def send_json(self, status, value):
            self.send(status, json.dumps(value), "application/json")

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path in FILES:
                name, content_type = FILES[path]
                self.send(200, (DASHBOARD / name).read_bytes(), content_type)
            elif path.startswith("/api/") and protect_reads and not self.authorized():
                self.send_json(401, error("UNAUTHORIZED", "a bearer token is required (Authorization: Bearer TOKEN)"))
            elif path == "/api/dashboard":
                self.send_json(200, fake.snapshot())
            elif path == "/api/events":
                self.events()
            else:
                self.send_json(404, error("NOT_FOUND", f"{path} is not here"))

        def authorized(self):
            if token is None:
                return True
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            return self.headers.get("Authorization") == f"Bearer {token}" or query.get("token") == [token]

        def events(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            try:
                while True:
                    self.wfile.write(f"event: snapshot\ndata: {json.dumps(fake.snapshot())}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(1)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def action(self, method):
            match = re.fullmatch(r"/api/jobs/(\d+)(?:/(retry|cancel))?", self.path.split("?", 1)[0])
            if not match or (method == "POST") != (match.group(2) is not None):
                self.send_json(404, error("NOT_FOUND", f"{method} {self.path} is not here"))
                return
            if not self.authorized():
                self.send_json(401, error("UNAUTHORIZED", "this action needs a token (Authorization: Bearer)"))
                return
            status, body = fake.act(method, int(match.group(1)), match.group(2))
            self.send_json(status, body)

        def do_POST(self):
            self.action("POST")

        def do_DELETE(self):
            self.action("DELETE")

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 (the default) picks a free one")
    parser.add_argument("--dead-job", type=int, default=9, help="the id of the dead job to retry (default 9)")
    parser.add_argument("--token", help="the token the actions need")
    parser.add_argument("--protect-reads", action="store_true", help="the API's reads need the token too")
    parser.add_argument("--without-queues", action="store_true",
                        help="send no `queues` and no job's `queue`, as a coordinator without named queues")
    arguments = parser.parse_args()
    fake = Fake(arguments.dead_job, with_queues=not arguments.without_queues)
    handler = make_handler(fake, arguments.token, arguments.protect_reads)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", arguments.port), handler)
    server.daemon_threads = True

    def ticker():
        while True:
            time.sleep(1)
            fake.tick()

    threading.Thread(target=ticker, daemon=True).start()
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
