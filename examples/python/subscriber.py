#!/usr/bin/env python3
"""Follow a Tributary coordinator's change feed: every commit exactly once and in order, resumable.

Prints one JSON line per commit that touched a wanted entity:
    {"seq": N, "position": "N:EPOCH", "entities": {"PullRequest": {"inserted": n, "updated": n, "deleted": n}, ...}}
and "caught up at seq N" on standard error when it goes live. Resume with --since <the last "position" processed>:
the coordinator checks that its history is the one followed up to there (EPOCH is the store epoch of the commit,
16 hex digits; a bare SEQ is checked only against the store's last commit).

The live stream (SUB socket on --feed) carries, per commit, one DidSave per entity touched (topic = entity name),
then a CommitSummary on "$commits"; a FeedHeartbeat on "$heartbeat" every 500 ms. Whatever the stream misses
(commits before --since, messages dropped while this subscriber was slow) is read from the coordinator's history
(HistoryRequest on the --listen DEALER socket), so each commit is printed once, in seq order. This is a port of
the Swift FeedReader (Sources/Shared/Client/FeedReader.swift), without durable subscribers and snapshots. A live
message of another store epoch, or a heartbeat showing the store behind the position (or at it in another epoch),
is checked with a history request carrying the position's epoch before anything more is printed: a store whose
history was rewritten (a power loss, a restore from a replica or a backup) answers FEED_REWRITTEN.

Exit status: 0 after --count lines or at --until-seq; 1 when the coordinator refuses a request; 2 when it does
not answer a history request within 60 s; 3 when the history to resume from was pruned (HISTORY_PRUNED); 4 when
the store's history is not the one followed (FEED_REWRITTEN: the message names the first seq that may differ).
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import zmq
from google.protobuf.message import DecodeError

sys.path.insert(0, str(Path(__file__).resolve().parent / "generated"))
try:
    import tributary_pb2 as pb
except ImportError:
    sys.exit("tributary_pb2 not found: run ./generate.sh first (see README.md)")

SIGNATURE = b"TRB1"
COMMITS_TOPIC = b"$commits"
HEARTBEAT_TOPIC = b"$heartbeat"
HISTORY_TIMEOUT_S = 60
SILENCE_WARNING_S = 10  # heartbeats come every 500 ms: this long without any feed message is worth a warning


class CoordinatorError(Exception):
    """The coordinator answered with an Error."""

    def __init__(self, error):
        super().__init__(f"{pb.ErrorCode.Name(error.code)}: {error.message}")
        self.code = error.code
        self.message = error.message
        self.seq = error.seq


class NoReply(Exception):
    """The coordinator did not answer in time."""


class Finished(Exception):
    """--count or --until-seq reached."""


class Subscriber:
    """The feed state machine.

    Invariant: every commit up to `position` was printed (or had no wanted parts) exactly once, in order; nothing
    at or below it is printed again. `parts` holds the live DidSave parts of the commit whose summary has not come.
    """

    def __init__(self, context, feed, listen, entities, count=None, until_seq=None):
        self.entities = set(entities)  # empty: every entity
        self.count = count
        self.until_seq = until_seq
        self.printed = 0
        self.position = None  # unknown until --since, the first heartbeat or the first summary
        self.epoch = 0  # the store epoch of commit `position`; 0 while not known (then only seq > last is checked)
        self.check_pending = False  # the last heartbeat asks for a check, made once the messages received are handled
        self.parts = []

        # The SUB socket first, so that live messages queue up while history is read.
        self.feed = context.socket(zmq.SUB)
        self.feed.setsockopt(zmq.LINGER, 0)
        self.feed.setsockopt(zmq.RCVHWM, 10_000)  # more is dropped, then filled from history
        for topic in [COMMITS_TOPIC, HEARTBEAT_TOPIC] + ([e.encode() for e in sorted(self.entities)] or [b""]):
            self.feed.setsockopt(zmq.SUBSCRIBE, topic)
        self.feed.connect(feed)

        self.listen = listen
        self.jobs = context.socket(zmq.DEALER)
        self.jobs.setsockopt(zmq.LINGER, 0)
        self.jobs.connect(listen)
        self.last_request_id = 0

    def wants(self, entity):
        return not self.entities or entity in self.entities

    # ------------------------------------------------------------------ output

    def deliver(self, parts, seq, epoch):
        """Prints commit `seq` of `epoch` (its wanted parts, if any) and moves the position to it."""
        if self.position is not None and seq <= self.position:
            return
        if self.until_seq is not None and seq > self.until_seq:
            raise Finished  # every commit up to until_seq was handled
        parts = [part for part in parts if self.wants(part.entity)]
        if parts:
            entities = {}
            for part in parts:
                counts = entities.setdefault(part.entity, {"inserted": 0, "updated": 0, "deleted": 0})
                counts["inserted"] += len(part.inserted_ids) // 16
                counts["updated"] += len(part.updated_ids) // 16
                counts["deleted"] += len(part.deleted_ids) // 16
            print(json.dumps({"seq": seq, "position": position(seq, epoch), "entities": entities}), flush=True)
            self.printed += 1
        self.move_to(seq, epoch)
        if self.count is not None and self.printed >= self.count:
            raise Finished

    def move_to(self, seq, epoch):
        if self.position is None or seq >= self.position:
            self.position, self.epoch = seq, epoch
        self.check_until()

    def check_until(self):
        if self.until_seq is not None and self.position >= self.until_seq:
            raise Finished

    def caught_up(self):
        """History is delivered up to the position: the live stream follows."""
        print(f"caught up at seq {self.position}", file=sys.stderr, flush=True)
        self.check_until()

    # ------------------------------------------------------------------ history

    def history(self, after, until, max_commits=0):
        """One HistoryRequest after the position `after` (checked against its epoch); returns the HistoryReply."""
        self.last_request_id += 1
        request = pb.HistoryRequest(after_seq=after, after_epoch=self.epoch, until_seq=until,
                                    entities=sorted(self.entities), max_commits=max_commits)
        envelope = pb.Envelope(request_id=self.last_request_id, history_request=request)
        self.jobs.send_multipart([SIGNATURE, envelope.SerializeToString()])
        deadline = time.monotonic() + HISTORY_TIMEOUT_S
        while True:
            remaining_ms = int((deadline - time.monotonic()) * 1000)
            if remaining_ms <= 0 or not self.jobs.poll(remaining_ms):
                raise NoReply(f"no reply from {self.listen} within {HISTORY_TIMEOUT_S} s "
                              "(is tributary-coordinator running?)")
            frames = self.jobs.recv_multipart()
            if len(frames) != 2 or frames[0] != SIGNATURE:
                continue
            reply = pb.Envelope.FromString(frames[1])
            if reply.request_id != self.last_request_id:
                continue  # late, or unsolicited
            body = reply.WhichOneof("body")
            if body == "error":
                raise CoordinatorError(reply.error)
            if body != "history_reply":
                raise CoordinatorError(pb.Error(code=pb.INTERNAL, message=f"unexpected reply {body}"))
            return reply.history_reply

    def catch_up(self, until):
        """Delivers the history after the position, up to `until` (0 = the last commit), page by page."""
        if until and until <= self.position:
            return
        while True:
            page = self.history(self.position, until)
            start = 0
            while start < len(page.parts):  # parts are ordered by seq: one delivery per commit
                seq, end = page.parts[start].seq, start
                while end < len(page.parts) and page.parts[end].seq == seq:
                    end += 1
                self.deliver(page.parts[start:end], seq, page.parts[start].epoch)
                start = end
            self.move_to(page.through_seq, page.through_epoch)
            goal = page.last_seq if until == 0 else min(until, page.last_seq)
            if page.through_seq >= goal:
                return

    def check(self):
        """Asks whether the store's history up to the position is the one printed (FEED_REWRITTEN if not)."""
        try:
            self.history(self.position, self.position, max_commits=1)
        except CoordinatorError as error:
            if error.code != pb.HISTORY_PRUNED:  # pruned: nothing more to read there, the next gap finds it
                raise

    # ------------------------------------------------------------------ live stream

    def on_message(self, frames):
        """One live message: [topic, body]."""
        if len(frames) != 2:
            return
        topic, body = frames
        try:
            if topic == HEARTBEAT_TOPIC:
                self.on_heartbeat(pb.FeedHeartbeat.FromString(body))
            elif topic == COMMITS_TOPIC:
                self.on_summary(pb.CommitSummary.FromString(body))
            elif not topic.startswith(b"$"):  # entity names cannot start with "$" ($jobs, ...)
                self.on_part(topic.decode(), body)
        except (DecodeError, UnicodeDecodeError):
            pass  # not a message of this protocol version

    def on_part(self, topic, body):
        part = pb.DidSave.FromString(body)
        if part.entity != topic or not self.wants(part.entity):
            return  # ZeroMQ matches topic prefixes: "User" also gets "UserProfile"
        if self.position is not None and part.seq <= self.position:
            return
        if self.parts and self.parts[0].seq != part.seq:
            self.parts = []  # parts of a commit whose summary never came: it is filled from history
        self.parts.append(part)

    def on_summary(self, summary):
        seq = summary.seq
        if self.position is None:
            self.position = seq - 1
            self.caught_up()
        received = [part for part in self.parts if part.seq == seq]
        self.parts = []
        if seq <= self.position:
            return
        expected = {entity for entity in summary.entities if self.wants(entity)}
        if (seq == self.position + 1 and {part.entity for part in received} == expected
                and (not self.epoch or summary.epoch == self.epoch)):
            self.deliver(received, seq, summary.epoch)
        else:
            # A gap before this commit, parts of it dropped, or another run's commit (checked by the request).
            self.catch_up(seq)

    def on_heartbeat(self, heartbeat):
        if self.position is None:
            self.position, self.epoch = heartbeat.last_seq, heartbeat.epoch
            self.caught_up()
        elif heartbeat.last_seq > self.position:
            self.check_pending = False  # the history request checks
            self.catch_up(heartbeat.last_seq)  # sent after every commit it counts: one was missed
        else:
            # The store is behind the position, or holds it in another run. The latest heartbeat decides: those
            # queued while history was read are overtaken by the next.
            self.check_pending = (heartbeat.last_seq < self.position
                                  or bool(self.epoch and heartbeat.epoch != self.epoch))

    def run(self, since):
        if since is not None:
            self.position, self.epoch = since
            self.check_until()
            self.catch_up(0)
            self.caught_up()
        last_message = time.monotonic()
        warned = False
        while True:
            if not self.feed.poll(0 if self.check_pending else 1000):
                if self.check_pending:
                    self.check_pending = False
                    self.check()
                    continue
                if not warned and time.monotonic() - last_message > SILENCE_WARNING_S:
                    print(f"no feed message for {SILENCE_WARNING_S} s (is tributary-coordinator running?); "
                          "still waiting", file=sys.stderr, flush=True)
                    warned = True
                continue
            last_message, warned = time.monotonic(), False
            self.on_message(self.feed.recv_multipart())


def position(seq, epoch):
    """A feed position as --since takes it: SEQ:EPOCH (16 hex digits), or SEQ when the epoch is not known."""
    return f"{seq}:{epoch:016x}" if epoch else str(seq)


def parse_position(text):
    """--since: SEQ or SEQ:EPOCH; returns (seq, epoch), epoch 0 when not given."""
    seq, _, epoch = text.partition(":")
    try:
        if not seq.isdigit() or (epoch and len(epoch) != 16):
            raise ValueError
        return int(seq), int(epoch, 16) if epoch else 0
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not SEQ or SEQ:EPOCH (EPOCH: 16 hex digits)") from None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--feed", metavar="ENDPOINT",
                        default=os.environ.get("TRIBUTARY_FEED", "tcp://127.0.0.1:7401"),
                        help="the coordinator's feed endpoint (env TRIBUTARY_FEED; default tcp://127.0.0.1:7401)")
    parser.add_argument("--listen", metavar="ENDPOINT",
                        default=os.environ.get("TRIBUTARY_LISTEN", "tcp://127.0.0.1:7400"),
                        help="the coordinator's jobs/control endpoint, for history (env TRIBUTARY_LISTEN; "
                             "default tcp://127.0.0.1:7400)")
    parser.add_argument("--entity", action="append", default=[], metavar="E",
                        help="only this entity's changes (repeat for several; default every entity)")
    parser.add_argument("--since", type=parse_position, metavar="SEQ[:EPOCH]",
                        help="resume after this position (a printed line's \"position\"): print the history after "
                             "it, then follow live (default: start live, at the store's position)")
    parser.add_argument("--count", type=int, metavar="N", help="exit after printing N commit lines")
    parser.add_argument("--until-seq", type=int, metavar="SEQ",
                        help="exit once every commit up to SEQ is handled")
    args = parser.parse_args()
    for name in ("count", "until_seq"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must not be negative")

    context = zmq.Context()
    try:
        subscriber = Subscriber(context, args.feed, args.listen, args.entity, args.count, args.until_seq)
        if args.count != 0:
            subscriber.run(args.since)
    except Finished:
        pass
    except CoordinatorError as error:
        statuses = {pb.HISTORY_PRUNED: 3, pb.FEED_REWRITTEN: 4}
        print(error.message if error.code in statuses else error, file=sys.stderr)
        return statuses.get(error.code, 1)
    except NoReply as error:
        print(error, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        context.destroy(linger=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
