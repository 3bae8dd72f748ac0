#!/usr/bin/env python3
"""Push an NDJSON file to a Tributary coordinator as `import` jobs, optionally waiting until they finish.

The file is cut into jobs of --chunk rows (blank lines dropped), pushed as one batch over a DEALER socket
(2 frames: b"TRB1" and a serialized tributary.v1.Envelope; see docs/protocol.md). With --wait, the batch is
polled until every job is done, dead or cancelled. The jobs may wait for other jobs or batches (--after,
--after-batch) and the batch may have a callback job (--on-complete). With --schedule NAME --cron EXPR --kind KIND,
it adds a periodic job instead (docs/jobs.md). With --edit ENTITY --set KEY=JSON ..., it saves one object's change
without a job, as a view context does (docs/protocol.md §7.5): the keys must include the entity's uniqueness key,
and the root merges the row into the object that has it (or inserts it).

Exit status: 0 on success; 1 when the file cannot be read, the coordinator refuses the push or a job is dead;
2 when the coordinator does not answer within 10 s.
"""

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

import zmq

sys.path.insert(0, str(Path(__file__).resolve().parent / "generated"))
try:
    import tributary_pb2 as pb
except ImportError:
    sys.exit("tributary_pb2 not found: run ./generate.sh first (see README.md)")

SIGNATURE = b"TRB1"
REPLY_TIMEOUT_MS = 10_000
BYTES_PER_PUSH = 8 << 20  # payload bytes per PushJobs message, as the Tributary CLI does
POLL_INTERVAL_S = 0.2


class CoordinatorError(Exception):
    """The coordinator answered with an Error."""

    def __init__(self, error):
        super().__init__(f"{pb.ErrorCode.Name(error.code)}: {error.message}")


class NoReply(Exception):
    """The coordinator did not answer in time."""


class Client:
    """Requests on the coordinator's jobs/control socket, one at a time. `endpoint` may list a cluster's members,
    comma-separated: a standby answers NOT_PRIMARY naming the primary (it did nothing of the request), and the
    request goes there instead, under the same id (docs/failover.md)."""

    def __init__(self, context, endpoint):
        self.context = context
        self.members = [member.strip() for member in endpoint.split(",") if member.strip()] or [endpoint]
        self.socket = None
        self.connect(self.members[0])
        self.last_id = 0

    def connect(self, endpoint):
        """A DEALER to one member (a fresh peer: nothing sent on the old one is carried over)."""
        if self.socket is not None:
            self.socket.close(linger=0)
        self.endpoint = endpoint
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(endpoint)
        self.poller = zmq.Poller()
        self.poller.register(self.socket, zmq.POLLIN)

    def request(self, **body):
        """Sends Envelope(**body) and returns the reply Envelope that echoes its request id."""
        self.last_id += 1
        envelope = pb.Envelope(request_id=self.last_id, **body)
        self.socket.send_multipart([SIGNATURE, envelope.SerializeToString()])
        deadline = time.monotonic() + REPLY_TIMEOUT_MS / 1000
        while True:
            remaining_ms = int((deadline - time.monotonic()) * 1000)
            if remaining_ms <= 0 or not self.poller.poll(remaining_ms):
                raise NoReply(f"no reply from {self.endpoint} within {REPLY_TIMEOUT_MS // 1000} s "
                              "(is tributary-coordinator running?)")
            frames = self.socket.recv_multipart()
            if len(frames) != 2 or frames[0] != SIGNATURE:
                continue
            reply = pb.Envelope.FromString(frames[1])
            if reply.request_id != self.last_id:
                continue  # unsolicited, or late
            if reply.WhichOneof("body") == "error" and reply.error.code == pb.NOT_PRIMARY and len(self.members) > 1:
                self.follow(reply.error)
                self.socket.send_multipart([SIGNATURE, envelope.SerializeToString()])
                continue
            if reply.WhichOneof("body") == "error":
                raise CoordinatorError(reply.error)
            return reply

    def follow(self, error):
        """A standby answered: to the primary it names, else (an election under way) the next member, after a
        pause."""
        named = error.primary.endpoint if error.HasField("primary") else ""
        if named and named != self.endpoint:
            return self.connect(named)
        time.sleep(0.25)
        self.connect(self.members[(self.members.index(self.endpoint) + 1) % len(self.members)]
                     if self.endpoint in self.members else self.members[0])


def chunks(path, rows_per_job):
    """Yields (payload, rows) per job: at most rows_per_job non-blank lines each."""
    lines = [line for line in Path(path).read_bytes().split(b"\n") if line.strip()]
    for start in range(0, len(lines), rows_per_job):
        rows = lines[start:start + rows_per_job]
        yield b"\n".join(rows) + b"\n", len(rows)


def push(client, specs, on_complete=None):
    """Pushes the specs as one batch, in messages of at most BYTES_PER_PUSH payload bytes; the last message sets
    the batch's callback, so it cannot run before every job is pushed."""
    batch, job_ids, group, size = "", [], [], 0

    def flush(last=False):
        nonlocal batch, group, size
        if group:
            push_jobs = pb.PushJobs(jobs=group, batch=batch)
            if last and on_complete is not None:
                push_jobs.on_complete.CopyFrom(on_complete)
            reply = client.request(push_jobs=push_jobs).push_reply
            batch = reply.batch
            job_ids.extend(reply.job_ids)
            group, size = [], 0

    for spec in specs:
        if size + len(spec.payload) > BYTES_PER_PUSH:
            flush()
        group.append(spec)
        size += len(spec.payload)
    flush(last=True)
    return batch, job_ids


def add_schedule(args, arguments):
    """Adds (or replaces) the schedule of --schedule and prints it."""
    spec = pb.ScheduleSpec(name=args.schedule, cron=args.cron, timezone=args.timezone, missed=args.missed,
                           job=pb.JobSpec(kind=args.kind, arguments=arguments, queue=args.queue))
    def put(client):
        request = pb.PutScheduleRequest(schedule=spec, replace=True)
        info = client.request(put_schedule_request=request).schedule_info
        print(f"schedule {info.schedule.name}: next tick at {info.next_tick:.0f} (seconds since 1970)", flush=True)
        return 0

    return with_client(args.listen, put)

def column(name, value):
    """A one-row Column holding a JSON value: a string, an integer, a number or a boolean."""
    if isinstance(value, bool):
        return pb.Column(name=name, ints=[int(value)])
    if isinstance(value, int):
        return pb.Column(name=name, ints=[value])
    if isinstance(value, float):
        return pb.Column(name=name, doubles=[value])
    if isinstance(value, str):
        return pb.Column(name=name, strings=[value])
    raise ValueError(f"{name}: {json.dumps(value)} is not a string, number or boolean")


def edit(client, entity, values):
    """Saves one object's values as a context's save outside any job; returns the SaveAck.

    The row goes as an insert under a fresh id, which the root merges into the object with the same uniqueness key.
    The save carries an id of its own: sent again after no answer, it is answered once, not applied twice."""
    batch = pb.EntityBatch(entity=entity, operation=pb.INSERT, ids=uuid.uuid4().bytes,
                           columns=[column(name, value) for name, value in values.items()])
    save = pb.SaveChanges(save_id=uuid.uuid4().bytes,
                          changes=pb.ChangeSet(batches=[batch]))
    for attempt in range(3):
        try:
            return client.request(save_changes=save, requires=["context-saves"]).save_ack
        except NoReply:
            if attempt == 2:
                raise


def wait(client, batch):
    """Polls the batch until it is finished; returns the last BatchStatusReply."""
    while True:
        status = client.request(batch_status_request=pb.BatchStatusRequest(batch=batch)).batch_status_reply
        if status.done_jobs + status.dead_jobs + status.cancelled_jobs >= status.total_jobs:
            return status
        time.sleep(POLL_INTERVAL_S)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", metavar="ENDPOINT",
                        default=os.environ.get("TRIBUTARY_LISTEN", "tcp://127.0.0.1:7400"),
                        help="the coordinator's jobs/control endpoint, or a cluster's members' comma-separated "
                             "(env TRIBUTARY_LISTEN; default tcp://127.0.0.1:7400)")
    parser.add_argument("--entity", metavar="NAME", help="the entity the rows belong to, e.g. PullRequest")
    parser.add_argument("--file", metavar="PATH", help="the NDJSON file: one row (JSON object) per line")
    parser.add_argument("--chunk", type=int, default=1000, metavar="N", help="rows per job (default 1000)")
    parser.add_argument("--queue", default="", metavar="NAME",
                        help="the named queue the jobs wait in (default: the coordinator's 'default')")
    parser.add_argument("--argument", action="append", default=[], metavar="KEY=VALUE",
                        help="an argument of every job, e.g. customer=acme for a per-customer limit (repeatable)")
    parser.add_argument("--after", action="append", default=[], type=int, metavar="JOB",
                        help="a job every pushed job waits for (repeatable)")
    parser.add_argument("--after-batch", action="append", default=[], metavar="BATCH",
                        help="a batch every pushed job waits for: each of its jobs done (repeatable)")
    parser.add_argument("--on-parent-failure", choices=["fail", "cancel", "run"], default="",
                        help="what a dead or cancelled parent does to the jobs (default: fail)")
    parser.add_argument("--on-complete", metavar="KIND",
                        help="a job of this kind runs once when the batch finishes, with its counts")
    parser.add_argument("--wait", action="store_true",
                        help="wait until every job is done, dead or cancelled; exit 1 if any is dead")
    parser.add_argument("--schedule", metavar="NAME", help="add (or replace) a schedule instead of pushing a file")
    parser.add_argument("--cron", metavar="EXPR", help="with --schedule: when it fires, e.g. '*/5 * * * *'")
    parser.add_argument("--kind", metavar="KIND", help="with --schedule: the kind of job each tick enqueues")
    parser.add_argument("--timezone", default="", metavar="ZONE", help="with --schedule: an IANA zone (default UTC)")
    parser.add_argument("--missed", choices=["once", "all", "skip"], default="",
                        help="with --schedule: ticks missed while no coordinator ran (default once)")
    parser.add_argument("--edit", metavar="ENTITY", help="save one object's values instead of pushing a file")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                        help="with --edit: a value, as JSON, e.g. login='\"ada\"' or additions=12 (repeatable)")
    args = parser.parse_args()
    if args.chunk <= 0:
        parser.error("--chunk must be positive")
    arguments = {}
    for item in args.argument:
        key, sep, value = item.partition("=")
        if not key or not sep:
            parser.error(f"--argument {item!r} is not KEY=VALUE")
        arguments[key] = value
    if args.edit:
        values = {}
        for item in args.set:
            key, sep, text = item.partition("=")
            if not key or not sep:
                parser.error(f"--set {item!r} is not KEY=JSON")
            try:
                values[key] = json.loads(text)
                column(key, values[key])
            except (json.JSONDecodeError, ValueError) as error:
                parser.error(f"--set {item!r}: {error}")
        if not values:
            parser.error("--edit needs at least one --set")

        def save(client):
            ack = edit(client, args.edit, values)
            print(f"saved as seq {ack.seq}" + (" (answered before)" if ack.duplicate else ""), flush=True)
            return 0

        return with_client(args.listen, save)
    if args.schedule:
        if not args.cron or not args.kind:
            parser.error("--schedule needs --cron and --kind")
        return add_schedule(args, arguments)
    if not args.entity or not args.file:
        parser.error("--entity and --file are required (or --schedule)")

    try:
        specs = [pb.JobSpec(kind="import", payload=payload, arguments={**arguments, "entity": args.entity},
                            total=rows, queue=args.queue, after_jobs=args.after, after_batches=args.after_batch,
                            on_parent_failure=args.on_parent_failure)
                 for payload, rows in chunks(args.file, args.chunk)]
    except OSError as error:
        sys.exit(f"cannot read {args.file}: {error.strerror}")
    if not specs:
        sys.exit(f"{args.file} has no rows")

    def push_file(client):
        on_complete = pb.JobSpec(kind=args.on_complete, queue=args.queue) if args.on_complete else None
        batch, job_ids = push(client, specs, on_complete)
        jobs = f"{len(job_ids)} job" + ("" if len(job_ids) == 1 else "s")
        print(f"pushed {jobs} as batch {batch} (job ids {' '.join(map(str, job_ids))})", flush=True)
        if args.wait:
            status = wait(client, batch)
            print(f"batch {batch}: {status.done_jobs} done, {status.dead_jobs} dead, "
                  f"{status.cancelled_jobs} cancelled of {status.total_jobs} jobs "
                  f"({status.done_rows}/{status.total_rows} rows)", flush=True)
            for dead in status.dead:
                print(f"job {dead.job_id} dead after {dead.attempts} attempts: {dead.message}", file=sys.stderr)
            if status.dead_jobs:
                return 1
        return 0

    return with_client(args.listen, push_file)


def with_client(endpoint, body):
    """Runs body(client) and returns its exit status: 1 when the coordinator refuses, 2 when it does not answer."""
    context = zmq.Context()
    try:
        return body(Client(context, endpoint))
    except CoordinatorError as error:
        print(error, file=sys.stderr)
        return 1
    except NoReply as error:
        print(error, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        context.destroy(linger=0)

if __name__ == "__main__":
    sys.exit(main())
