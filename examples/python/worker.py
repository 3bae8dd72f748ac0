#!/usr/bin/env python3
"""A Tributary worker in Python: runs `py-import` jobs (NDJSON rows of one entity, like the built-in `import`).

A job of kind `py-import` carries `arguments["entity"]` (the entity the rows belong to) and NDJSON rows as its
payload, in the format of docs/model.md ("Import rows"). Optional `arguments["batch_size"]` overrides
--batch-rows for that job. The worker cuts the rows into batches and sends each as one column-wise change set
(SaveChanges), one after another, the last one completing the job.

The conversation on the jobs/control socket (a DEALER; every message is [b"TRB1", Envelope]; docs/protocol.md):

    worker                                  coordinator
    WorkerHello{name, pid, heartbeat_interval_ms, job_kinds=["py-import"]} ->
                                         <- Welcome{worker_id, model_json, liveness}
    WorkerReady{credit = --concurrency}  ->
    Heartbeat (every heartbeat interval) ->
                                         <- JobAssignment{job_id, attempt, spec, committed_batches}
    SaveChanges{job_id, attempt, batch_index, changes, progress_done, completes_job, credit} ->
                                         <- SaveAck{...} or Error{code, job_id}
    JobFailed{job_id, attempt, message, permanent} / WorkerReady{credit: 1} when a job ends without a
        completing save
                                         <- CancelJob{job_id, attempt}: stop that job
                                         <- Drain: take no new job, finish the running ones
    WorkerBye                            ->   (then exit 0)

It is written as one event loop on one thread (pyzmq sockets are not thread-safe): each running job is a small
state machine that has at most one save on the wire, and builds its next batch while that save is answered.

SIGTERM and SIGINT are handled as a Drain. Exit status: 0 after a drain; 1 when the coordinator refuses to
register this worker for good (e.g. FORBIDDEN).
"""

import argparse
import base64
import datetime
import json
import os
import signal
import socket
import sys
import time
import uuid
from pathlib import Path

import zmq
from google.protobuf.message import DecodeError

sys.path.insert(0, str(Path(__file__).resolve().parent / "generated"))
try:
    import tributary_pb2 as pb
except ImportError:
    sys.exit("tributary_pb2 not found: run ./generate.sh first (see README.md)")

SIGNATURE = b"TRB1"
KIND = "py-import"
HELLO_TIMEOUT_S = 5      # no Welcome this long: the coordinator is not there yet; reconnect and say hello again
SAVE_TIMEOUT_S = 60      # a save unanswered this long: the coordinator is gone; reconnect and register again
BYE_LINGER_MS = 2000     # how long WorkerBye may take to go out when exiting
INT64 = (-(1 << 63), (1 << 63) - 1)

# Save errors after which retrying the job cannot help: the job is failed with `permanent` (docs/jobs.md,
# "Guarantees"; protocol.md §10 for TOO_LARGE).
PERMANENT_ERRORS = {pb.UNKNOWN_ENTITY, pb.UNKNOWN_ATTRIBUTE, pb.WRONG_TYPE, pb.CONSTRAINT_VIOLATION, pb.TOO_LARGE}


def log(message):
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------- the model

class Entity:
    """One entity of Welcome.model_json (docs/model.md, "Format")."""

    def __init__(self, spec):
        self.name = spec["name"]
        # attribute name -> (type, optional); relationship name -> (destination, to_many)
        self.attributes = {a["name"]: (a["type"], a.get("optional", False)) for a in spec.get("attributes", [])}
        self.relationships = {r["name"]: (r["destination"], r.get("toMany", False))
                              for r in spec.get("relationships", [])}
        uniqueness = spec.get("uniqueness", [])
        self.key = list(uniqueness[0]) if uniqueness else []  # the FIRST constraint is the find-or-create key
        self.required = [name for name, (_, optional) in self.attributes.items() if not optional]


def load_model(model_json):
    return {e["name"]: Entity(e) for e in json.loads(model_json)["entities"]}


def new_id():
    """A UUIDv7 (48-bit milliseconds, then random): time-ordered ids keep the store's id index appending."""
    raw = bytearray((time.time_ns() // 1_000_000).to_bytes(6, "big") + os.urandom(10))
    raw[6] = 0x70 | (raw[6] & 0x0F)  # version 7
    raw[8] = 0x80 | (raw[8] & 0x3F)  # RFC 4122 variant
    return bytes(raw)


# ---------------------------------------------------------------------------------------------------- rows

class RowError(Exception):
    """A bad row: the job fails permanently with "line N: <message>"."""

    def __init__(self, line, message):
        super().__init__(f"line {line}: {message}")


KIND_NAMES = {"string": "a JSON string", "int": "a 64-bit JSON integer", "double": "a JSON number",
              "bool": "true or false", "date": "an ISO 8601 date-time string with a time zone",
              "data": "a base64 string", "uuid": "a UUID string"}


def attribute_value(kind, value):
    """A JSON value of an import row -> the Python value for the change-set column (docs/model.md, "Types").
    Raises ValueError naming what was expected."""
    try:
        if kind == "string" and isinstance(value, str):
            return value
        if kind == "int" and isinstance(value, int) and not isinstance(value, bool) and INT64[0] <= value <= INT64[1]:
            return value
        if kind == "double" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if kind == "bool" and isinstance(value, bool):
            return int(value)
        if kind == "date" and isinstance(value, str):
            moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
            if moment.tzinfo is not None:
                return moment.timestamp()  # seconds since 1970
        if kind == "data" and isinstance(value, str):
            return base64.b64decode(value, validate=True)
        if kind == "uuid" and isinstance(value, str):
            return uuid.UUID(value).bytes
    except ValueError:  # a string that is no date, base64 or UUID
        pass
    raise ValueError(f"expects {KIND_NAMES.get(kind, kind)}, got {json.dumps(value)[:40]}")


class Obj:
    """An object of the change set being built: its id and the properties the rows set (name -> value; a
    to-one is a 16-byte id, a to-many a list of ids, None is NULL)."""

    def __init__(self, entity, line):
        self.entity, self.line, self.id, self.props = entity, line, new_id(), {}
        self.reference = True  # only nested objects so far (a top-level row always creates or updates)


class ChangeSetBuilder:
    """Turns one batch of import rows into INSERT batches, as the built-in `import` does (docs/model.md, "Import
    rows"; protocol.md §5): each row, and each nested object, is found or created by its entity's first uniqueness
    constraint within the batch; the coordinator then merges a new object into the stored one with the same key
    (protocol.md §7.2) and points references to it."""

    def __init__(self, model):
        self.model = model
        self.objects = []    # in creation order
        self.by_key = {}     # (entity, key values) -> Obj

    def add_row(self, entity, row, line, nested=False):
        """Applies a row (a dict) of `entity`; returns its object. Nested objects are rows of their destination."""
        if not isinstance(row, dict):
            raise RowError(line, f"a {entity.name} row must be a JSON object")
        props = {}
        for name, value in row.items():
            if name in entity.attributes:
                kind, optional = entity.attributes[name]
                if value is None:
                    if not optional:
                        raise RowError(line, f"{entity.name}.{name} is required and cannot be null")
                    props[name] = None
                    continue
                try:
                    props[name] = attribute_value(kind, value)
                except ValueError as error:
                    raise RowError(line, f"{entity.name}.{name} {error}") from None
            elif name in entity.relationships:
                destination, to_many = entity.relationships[name]
                target = self.model[destination]
                if value is None:
                    props[name] = None  # clears a to-one, empties a to-many
                elif to_many:
                    if not isinstance(value, list):
                        raise RowError(line, f"{entity.name}.{name} expects an array of {destination} objects")
                    props[name] = [self.add_row(target, item, line, nested=True).id for item in value]
                else:
                    if not isinstance(value, dict):
                        raise RowError(line, f"{entity.name}.{name} expects a {destination} object or null")
                    props[name] = self.add_row(target, value, line, nested=True).id
            else:
                raise RowError(line, f"{entity.name} has no attribute or relationship {name!r}")

        obj = None
        if entity.key:
            missing = [name for name in entity.key if props.get(name) is None]
            if missing:
                raise RowError(line, f"{entity.name} key {'+'.join(entity.key)} needs {', '.join(missing)}")
            key = (entity.name,) + tuple(props[name] for name in entity.key)
            obj = self.by_key.get(key)
            if obj is None:
                obj = self.by_key[key] = Obj(entity, line)
                self.objects.append(obj)
        else:
            obj = Obj(entity, line)  # no uniqueness: every row is a new object
            self.objects.append(obj)
        obj.props.update(props)     # later rows of the same object in this batch win, property by property
        obj.reference = obj.reference and nested
        return obj

    def change_set(self):
        """The ChangeSet: one INSERT EntityBatch per (entity, set of columns), as protocol.md §7.1 asks."""
        groups = {}
        for obj in self.objects:
            missing = [name for name in obj.entity.required if name not in obj.props]
            # A nested object that carries nothing but its key is a *reference* (`"author": {"login": "ada"}`): the
            # coordinator finds the stored object, or refuses the save. Any other object must be creatable.
            if missing and not (obj.reference and set(obj.props) == set(obj.entity.key)):
                raise RowError(obj.line, f"{obj.entity.name} needs {', '.join(missing)} (required) for a new "
                                         "object")
            groups.setdefault((obj.entity.name, tuple(sorted(obj.props))), []).append(obj)
        batches = []
        for (entity_name, names), objs in groups.items():
            entity = self.model[entity_name]
            columns = [encode_column(entity, name, [o.props[name] for o in objs]) for name in names]
            batches.append(pb.EntityBatch(entity=entity_name, operation=pb.INSERT,
                                          ids=b"".join(o.id for o in objs), columns=columns))
        return pb.ChangeSet(batches=batches)


def nulls(values):
    """The null bitmap: bit i % 8 of byte i // 8 set when row i is null; empty when no row is."""
    if all(v is not None for v in values):
        return b""
    out = bytearray((len(values) + 7) // 8)
    for i, v in enumerate(values):
        if v is None:
            out[i >> 3] |= 1 << (i & 7)
    return bytes(out)


def encode_column(entity, name, values):
    """One Column: exactly the array of the property's type, dense (a null row holds a placeholder)."""
    column = pb.Column(name=name, nulls=nulls(values))
    if name in entity.relationships:
        if entity.relationships[name][1]:  # to-many: counts + every id, row after row
            column.counts.extend(len(v or []) for v in values)
            column.fixed16 = b"".join(b"".join(v or []) for v in values)
        else:
            column.fixed16 = b"".join(v or bytes(16) for v in values)
        return column
    kind = entity.attributes[name][0]
    if kind in ("string",):
        column.strings.extend(v if v is not None else "" for v in values)
    elif kind in ("int", "bool"):
        column.ints.extend(v if v is not None else 0 for v in values)
    elif kind in ("double", "date"):
        column.doubles.extend(v if v is not None else 0.0 for v in values)
    elif kind == "data":
        column.blobs.extend(v if v is not None else b"" for v in values)
    elif kind == "uuid":
        column.fixed16 = b"".join(v if v is not None else bytes(16) for v in values)
    return column


def parse_row(raw, line):
    def no_constants(name):
        raise ValueError(f"{name} is not JSON")

    try:
        return json.loads(raw, parse_constant=no_constants)
    except json.JSONDecodeError as error:
        raise RowError(line, f"bad JSON: {error.msg} at column {error.colno}") from None
    except ValueError as error:  # NaN/Infinity, or bytes that are not UTF-8
        raise RowError(line, f"bad JSON: {error}") from None


# ---------------------------------------------------------------------------------------------------- a job

class Job:
    """One attempt of a py-import job: sends batch after batch, each after the previous one's SaveAck."""

    def __init__(self, assignment, batch_rows):
        self.id, self.attempt = assignment.job_id, assignment.attempt
        self.spec = assignment.spec
        self.committed = assignment.committed_batches  # batches earlier attempts committed: resume after them
        self.entity_name = self.spec.arguments.get("entity", "")
        self.batch_rows = batch_rows
        self.started = time.monotonic()
        self.in_flight = None    # request id of the save on the wire
        self.in_flight_credit = 0  # the credit that save carries
        self.sent_at = 0.0
        self.prepared = None     # the next SaveChanges, or the RowError building it raised
        self.saves = 0           # batches this attempt sent
        # The rows: (1-based line number, bytes) of every non-blank line (blank lines are skipped; error messages
        # give line numbers within the payload).
        self.rows = [(n, line) for n, line in enumerate(self.spec.payload.split(b"\n"), 1) if line.strip()]

    def describe(self):
        return f"job {self.id} ({KIND} {self.entity_name or '?'}, attempt {self.attempt})"

    def batches(self):
        """Batch k covers rows [k × batch_rows, (k+1) × batch_rows), whatever attempt sends it, so
        committed_batches is an exact resume point; an empty payload is one empty, completing batch."""
        return max(1, -(-len(self.rows) // self.batch_rows))

    def build(self, index, model, credit_on_completion):
        """The SaveChanges of batch `index`; raises RowError for a bad row."""
        entity = model[self.entity_name]
        start, end = index * self.batch_rows, min((index + 1) * self.batch_rows, len(self.rows))
        builder = ChangeSetBuilder(model)
        for line, raw in self.rows[start:end]:
            builder.add_row(entity, parse_row(raw, line), line)
        completes = index >= self.batches() - 1
        # progress_done is the job's progress after this batch (rows read, the skipped ones included); credit=1
        # on the completing save asks for the next job in the same commit (protocol.md §6.2).
        return pb.SaveChanges(job_id=self.id, attempt=self.attempt, batch_index=index,
                              changes=builder.change_set(), progress_done=end,
                              completes_job=completes, credit=1 if completes and credit_on_completion else 0)


# ---------------------------------------------------------------------------------------------------- the worker

class Worker:
    def __init__(self, args):
        self.args = args
        self.context = zmq.Context()
        self.socket = None
        self.next_request_id = 0
        self.worker_id = None         # set by Welcome
        self.hello_id = None          # request id of the WorkerHello waiting for its Welcome
        self.hello_sent_at = 0.0
        self.registered_after = 0     # errors about messages sent before the last hello are stale
        self.model = {}
        self.jobs = {}                # job id -> Job (running)
        self.waiting = []             # assignments beyond --concurrency (should not happen: credit limits them)
        self.saves = {}               # request id -> Job, for each save on the wire
        self.dropped = set()          # request ids of saves of jobs that ended meanwhile: their answers are ignored
        self.draining = None          # why, once draining
        self.next_heartbeat = 0.0
        self.stop_signal = None       # set by the SIGTERM/SIGINT handler
        # A cluster's members (docs/failover.md): the one connected to; a standby names the primary (NOT_PRIMARY).
        self.members = [member.strip() for member in self.args.listen.split(",") if member.strip()] or [self.args.listen]
        self.endpoint = self.members[0]
        self.connect()

    # ------------------------------------------------------------------ the socket

    def connect(self):
        """A fresh DEALER (a new peer for the coordinator: anything queued on the old one is dropped)."""
        if self.socket is not None:
            self.socket.close(linger=0)
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(self.endpoint)

    def next_member(self):
        """The member after the one connected to (an election under way, or the one connected to is gone)."""
        if len(self.members) > 1:
            at = self.members.index(self.endpoint) if self.endpoint in self.members else -1
            self.endpoint = self.members[(at + 1) % len(self.members)]

    def follow(self, error):
        """A standby answered NOT_PRIMARY: to the primary it names (else the next member, after a pause), as a new
        peer that registers again. The standby did nothing of what it was sent."""
        named = error.primary.endpoint if error.HasField("primary") else ""
        if named and named != self.endpoint:
            self.endpoint = named
        else:
            time.sleep(0.25)
            self.next_member()
        log(f"{error.message}; moving to {self.endpoint}")
        self.connect()
        self.register_again(f"NOT_PRIMARY from a standby")

    def send(self, **body):
        """Sends one Envelope with a fresh request id (every message gets one, so an Error can be matched)."""
        self.next_request_id += 1
        envelope = pb.Envelope(request_id=self.next_request_id, **body)
        self.socket.send_multipart([SIGNATURE, envelope.SerializeToString()])
        return self.next_request_id

    # ------------------------------------------------------------------ registration

    def hello(self):
        self.worker_id = None
        self.hello_id = self.send(worker_hello=pb.WorkerHello(
            name=self.args.name, pid=os.getpid(), heartbeat_interval_ms=self.args.heartbeat_ms,
            job_kinds=[KIND], accepts_batches=True, queues=self.args.queues))
        self.hello_sent_at = time.monotonic()

    def register_again(self, why):
        """The coordinator forgot this worker (restart, silence) or stopped answering: every lease it held is void,
        so its jobs are abandoned (sending JobFailed for them would be ignored) and it says hello again."""
        for job in list(self.jobs.values()) + self.waiting:
            log(f"{job.describe()}: abandoned after {job.saves} batches ({why}); the coordinator runs it again")
        self.jobs.clear()
        self.waiting.clear()
        self.saves.clear()
        self.dropped.clear()  # answers to anything sent before the next hello are ignored anyway
        if self.draining:
            self.worker_id = None  # nothing left to finish
            return
        log(f"registering again: {why}")
        self.hello()

    def on_welcome(self, welcome):
        self.worker_id = welcome.worker_id
        self.registered_after = self.hello_id
        self.hello_id = None
        self.model = load_model(welcome.model_json)
        log(f"registered as {self.worker_id} at {self.endpoint} ({KIND}, concurrency {self.args.concurrency}, "
            f"liveness {welcome.liveness} × {self.args.heartbeat_ms} ms)")
        self.next_heartbeat = time.monotonic() + self.args.heartbeat_ms / 1000
        if self.draining:
            self.finish_drain()
        else:
            self.send(worker_ready=pb.WorkerReady(credit=self.args.concurrency))

    # ------------------------------------------------------------------ jobs

    def give_back_slot(self):
        """A job ended without a completing save that carried credit=1: ask for the next one."""
        if not self.draining:
            self.send(worker_ready=pb.WorkerReady(credit=1))

    def on_assignment(self, assignment):
        job = Job(assignment, self.args.batch_rows)
        if self.draining or len(self.jobs) >= self.args.concurrency:
            self.waiting.append(job)  # not started: WorkerBye hands it back without counting an attempt
            return
        self.start(job)

    def start(self, job):
        self.jobs[job.id] = job
        batch_size = job.spec.arguments.get("batch_size")
        if job.spec.kind != KIND:
            return self.fail(job, f"this worker runs only {KIND} jobs, not {job.spec.kind!r}", permanent=True)
        if job.entity_name not in self.model:
            return self.fail(job, f"unknown entity {job.entity_name!r} (arguments[\"entity\"])", permanent=True)
        if batch_size is not None:
            if not batch_size.isdigit() or int(batch_size) <= 0:
                return self.fail(job, f"batch_size {batch_size!r} is not a positive integer", permanent=True)
            job.batch_rows = int(batch_size)
        self.prepare(job, job.committed)
        self.send_prepared(job)

    def prepare(self, job, index):
        """Builds the save of batch `index` (while the previous one is on the wire)."""
        try:
            job.prepared = job.build(index, self.model, credit_on_completion=not self.draining)
        except RowError as error:
            job.prepared = error

    def send_prepared(self, job):
        save, job.prepared = job.prepared, None
        if isinstance(save, RowError):
            return self.fail(job, str(save), permanent=True)  # the batches before it stay committed
        if self.draining:
            save.credit = 0  # leaving: no more jobs
        job.in_flight = self.send(save_changes=save)
        job.in_flight_credit = save.credit
        job.sent_at = time.monotonic()
        job.saves += 1
        self.saves[job.in_flight] = job
        if not save.completes_job:
            self.prepare(job, save.batch_index + 1)

    def on_save_ack(self, job, ack):
        job.in_flight = None
        if job.prepared is not None:
            return self.send_prepared(job)
        # That was the completing save (duplicate or not): the job is done, and its credit=1 asked for the next.
        skipped = min(job.committed * job.batch_rows, len(job.rows))
        resumed = f", resumed after {job.committed} committed batches ({skipped} rows)" if job.committed else ""
        self.end(job, f"done: {len(job.rows) - skipped} rows in batches {job.committed}-"
                      f"{job.committed + job.saves - 1}{resumed}, {time.monotonic() - job.started:.2f} s",
                 slot_given_back=not self.draining)

    def on_save_error(self, job, error):
        job.in_flight = None
        code, name = error.code, pb.ErrorCode.Name(error.code)
        if code == pb.UNKNOWN_WORKER:
            return self.register_again(f"{name} answering a save of job {job.id}")
        # A refused save's credit is added all the same (found by testing; protocol.md does not say so): when the
        # completing save carried credit=1, the slot is already given back.
        given_back = job.in_flight_credit > 0
        if code in (pb.STALE_LEASE, pb.UNKNOWN_JOB):
            # The lease is gone (the job was re-queued, given to another worker, deleted): write nothing more.
            return self.end(job, f"abandoned: {name}: {error.message}", slot_given_back=given_back)
        if code == pb.JOB_CANCELLED:
            return self.end(job, f"cancelled after {job.saves - 1} batches ({error.message})",
                            slot_given_back=given_back)
        self.fail(job, f"save of batch {job.committed + job.saves - 1} refused: {name}: {error.message}",
                  permanent=code in PERMANENT_ERRORS, slot_given_back=given_back)

    def fail(self, job, message, permanent, slot_given_back=False):
        self.send(job_failed=pb.JobFailed(job_id=job.id, attempt=job.attempt, message=message, permanent=permanent))
        self.end(job, f"failed{' permanently' if permanent else ''}: {message}", slot_given_back=slot_given_back)

    def on_cancel(self, cancel):
        """CancelJob (a client cancelled the job, or its attempt ran past timeout_ms): stop at once. A save on the
        wire is answered anyway (SaveAck or JOB_CANCELLED) and ignored."""
        job = self.jobs.get(cancel.job_id)
        if job is not None and job.attempt == cancel.attempt:
            # A completing save on the wire with credit=1 is refused, but its credit counts: the slot is back.
            self.end(job, f"cancelled by the coordinator after {job.saves} batches sent",
                     slot_given_back=job.in_flight is not None and job.in_flight_credit > 0)
        for job in [j for j in self.waiting if j.id == cancel.job_id and j.attempt == cancel.attempt]:
            self.waiting.remove(job)
            log(f"{job.describe()}: cancelled before it started")
            self.give_back_slot()

    def end(self, job, outcome, slot_given_back=False):
        """The one line per job; frees its slot and starts a waiting job, if any."""
        log(f"{job.describe()}: {outcome}")
        self.jobs.pop(job.id, None)
        if job.in_flight is not None and self.saves.pop(job.in_flight, None):
            self.dropped.add(job.in_flight)  # cancelled meanwhile: its SaveAck or Error means nothing now
        if not slot_given_back:
            self.give_back_slot()
        if self.waiting and not self.draining and len(self.jobs) < self.args.concurrency:
            self.start(self.waiting.pop(0))
        if self.draining:
            self.finish_drain()

    # ------------------------------------------------------------------ drain and exit

    def drain(self, why):
        if self.draining:
            return
        self.draining = why
        log(f"draining ({why}): {len(self.jobs)} running jobs to finish, taking no new ones")
        self.finish_drain()

    def finish_drain(self):
        """Once no job runs: WorkerBye (jobs given but not started go back without counting an attempt)."""
        if self.jobs or self.hello_id is not None:
            return
        if self.worker_id is not None:
            if self.waiting:
                log(f"handing back {len(self.waiting)} jobs not started: "
                    f"{' '.join(str(job.id) for job in self.waiting)}")
            self.send(worker_bye=pb.WorkerBye())
            self.socket.close(linger=BYE_LINGER_MS)  # let the goodbye go out
            self.socket = None
        raise SystemExit(0)

    # ------------------------------------------------------------------ the loop

    def on_envelope(self, envelope):
        body = envelope.WhichOneof("body")
        rid = envelope.request_id
        if rid in self.dropped:
            self.dropped.discard(rid)
        elif body == "welcome" and rid == self.hello_id:
            self.on_welcome(envelope.welcome)
        elif body == "job_assignment":
            self.on_assignment(envelope.job_assignment)
        elif body == "save_ack" and rid in self.saves:
            self.on_save_ack(self.saves.pop(rid), envelope.save_ack)
        elif body == "cancel_job":
            self.on_cancel(envelope.cancel_job)
        elif body == "drain":
            self.drain("the coordinator is stopping")
        elif body == "error":
            self.on_error(rid, envelope.error)
        # anything else (a late Welcome, an ack of an abandoned save) is stale: ignore it

    def on_error(self, rid, error):
        name = pb.ErrorCode.Name(error.code)
        if error.code == pb.NOT_PRIMARY:
            # Whatever it answered (the hello, a heartbeat, a save), this connection reaches a standby; an answer to
            # something sent before the last hello is stale.
            latest = self.hello_id if self.hello_id is not None else self.registered_after
            if rid >= latest:
                self.follow(error)
            return
        if rid in self.saves:
            return self.on_save_error(self.saves.pop(rid), error)
        if rid == self.hello_id:
            if error.code == pb.SHUTTING_DOWN:  # try again in a moment
                self.hello_id, self.hello_sent_at = None, time.monotonic()
                return
            log(f"the coordinator refused to register this worker: {name}: {error.message}")
            raise SystemExit(1)
        if error.code == pb.UNKNOWN_WORKER:
            # A heartbeat (or WorkerReady, JobFailed) of a registration the coordinator no longer knows.
            if self.worker_id is not None and rid > self.registered_after:
                self.register_again(f"{name}: {error.message}")
            return
        if rid > self.registered_after:
            log(f"the coordinator refused a message: {name}: {error.message}")

    def run(self):
        self.hello()
        while True:
            now = time.monotonic()
            if self.stop_signal and not self.draining:
                if self.worker_id is None:
                    log(f"stopping ({self.stop_signal}) before registering")
                    return 0
                self.drain(self.stop_signal)
            if self.hello_id is None and self.worker_id is None:
                if self.draining:
                    raise SystemExit(0)
                if now - self.hello_sent_at >= 1:  # SHUTTING_DOWN a moment ago
                    self.hello()
            elif self.hello_id is not None and now - self.hello_sent_at > HELLO_TIMEOUT_S:
                log(f"no Welcome from {self.endpoint} within {HELLO_TIMEOUT_S} s; trying again")
                self.next_member()
                self.connect()
                self.hello()
            if self.worker_id is not None:
                if now >= self.next_heartbeat:
                    self.send(heartbeat=pb.Heartbeat())
                    self.next_heartbeat = now + self.args.heartbeat_ms / 1000
                stuck = [job for job in self.jobs.values() if job.in_flight and now - job.sent_at > SAVE_TIMEOUT_S]
                if stuck:
                    self.next_member()
                    self.connect()
                    self.register_again(f"no answer to a save of job {stuck[0].id} within {SAVE_TIMEOUT_S} s")
                    continue

            timeout = 100 if self.worker_id is None else max(0, min(100, (self.next_heartbeat - now) * 1000))
            if not self.socket.poll(timeout):
                continue
            while True:
                try:
                    frames = self.socket.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                if len(frames) < 2 or frames[0] != SIGNATURE:
                    continue
                for raw in frames[1:]:  # with accepts_batches, one message may carry several envelopes
                    try:
                        envelope = pb.Envelope.FromString(raw)
                    except DecodeError:
                        continue  # not this protocol version's
                    self.on_envelope(envelope)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", metavar="ENDPOINT",
                        default=os.environ.get("TRIBUTARY_LISTEN", "tcp://127.0.0.1:7400"),
                        help="the coordinator's jobs/control endpoint, or a cluster's members' comma-separated "
                             "(env TRIBUTARY_LISTEN; default tcp://127.0.0.1:7400)")
    parser.add_argument("--name", default=f"{socket.gethostname()}:{os.getpid()}",
                        help="the name shown in `tributary status` (default host:pid)")
    parser.add_argument("--concurrency", type=int, default=1, metavar="N",
                        help="jobs run at once (default 1)")
    parser.add_argument("--queues", default="default", metavar="Q,Q",
                        help="the named queues to serve, in order (default: default)")
    parser.add_argument("--batch-rows", type=int, default=500, metavar="N",
                        help="rows per save (default 500; a job's arguments[\"batch_size\"] overrides it). Every "
                             "worker of this kind must use the same value, or resumed jobs skip the wrong rows")
    parser.add_argument("--heartbeat-ms", type=int, default=1000, metavar="MS",
                        help="milliseconds between heartbeats, announced to the coordinator (50-60000; default 1000)")
    args = parser.parse_args()
    args.queues = [name.strip() for name in args.queues.split(",")]
    if not args.queues or any(not name for name in args.queues) or len(set(args.queues)) != len(args.queues):
        parser.error("--queues must name distinct queues, separated by commas")
    if not 1 <= args.concurrency <= 1024:
        parser.error("--concurrency must be 1 to 1024")
    if args.batch_rows <= 0:
        parser.error("--batch-rows must be positive")
    if not 50 <= args.heartbeat_ms <= 60_000:
        parser.error("--heartbeat-ms must be 50 to 60000")

    worker = Worker(args)

    def on_signal(number, _frame):
        worker.stop_signal = signal.Signals(number).name  # handled by the loop, within 100 ms

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # A parent may start us with these signals blocked (the mask is inherited): take them anyway.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        return worker.run()
    except SystemExit as exit_:
        return exit_.code
    finally:
        worker.context.destroy(linger=0)  # a WorkerBye, sent on a socket closed with a linger, still goes out


if __name__ == "__main__":
    sys.exit(main())
