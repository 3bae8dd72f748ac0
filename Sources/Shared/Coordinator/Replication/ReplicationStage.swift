import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TributaryCore
import ZeroMQ

/// A primary's synchronous replication (docs/failover.md): the ``CommitStage`` that holds each write until every
/// standby in sync holds, durably, the records up to it, so that nothing a client is answered, the feed publishes or
/// a worker is handed can be missing from a standby (the order of MySQL's AFTER_SYNC, PostgreSQL's
/// `synchronous_commit = on`).
///
/// Records come from the writer's ``ReplicationCapture`` (``recorded(_:)``, on the writer's thread) and go out on a
/// ROUTER socket of their own, one loop thread, to each standby that said hello with a tail the kept records
/// continue. A standby is in sync once it acknowledged the last record at the time; from then on every release
/// waits for it. One that falls silent for ``dropAfter`` (gone, fetching a snapshot, refusing records), or comes
/// back behind what it acknowledged, is dropped: once the cluster's record in etcd no longer names it (``dropped(_:)``,
/// from the ``SyncStateKeeper``), releases stop waiting for it; until then they still do (strict: no write is
/// acknowledged with fewer copies than the record promises). With no standby in sync nothing is released.
/// Nothing is released either once the primary learns it was deposed: a standby promised a newer epoch, or holds
/// records beyond this store's.
///
/// The router never waits on it: ``committed(_:release:)`` only queues, and releases come from the loop thread.
final class ReplicationStage: CommitStage, Sendable {
    private struct Standby {
        /// Its socket's routing id (its name, so that a reconnection keeps it).
        var id: Data
        /// The next record it is sent.
        var next: UInt64
        /// Every record through this one is durable on it.
        var acknowledged: UInt64
        /// It acknowledged the last record there was at the time: every release waits for it from then on.
        var inSync = false
        /// When it last acknowledged records or was taken at its hello.
        var lastHeard = ContinuousClock.now
        /// In sync, and to be dropped: releases wait for it until the cluster's record no longer names it.
        var dropping = false
    }

    private struct State {
        /// The recent records, oldest first, for standbys that come back.
        var kept: [ReplicationRecord] = []
        var keptBytes = 0
        /// The store's last record.
        var tail: ReplicationTail
        /// By name: a standby that comes back takes its own place.
        var standbys: [String: Standby] = [:]
        /// Writes held: the last writer position of a batch the pipeline handed over, and the record it needs.
        var held: [(position: UInt64, needs: UInt64)] = []
        var release: (@Sendable (UInt64) -> Void)?
        /// Why this primary may release nothing more (a newer epoch exists, or a standby is ahead of it).
        var deposed: String?
        /// Hellos answered, taken or not.
        var helloes = 0
    }

    /// The most bytes of records kept for standbys that fall behind.
    static let keptByteLimit = 256 << 20

    /// Where standbys connect.
    let endpoint: String
    /// The leader epoch this primary writes under.
    let epoch: Int64
    /// Releases without waiting for a standby (the cluster recorded that no standby is eligible).
    let asynchronous: Bool
    /// The store's schema (``SchemaFingerprint``): a standby of another is refused.
    let schema: UInt64
    private let loop: SocketLoop
    private let state: Mutex<State>
    private let snapshots: SnapshotSource?
    private let stillLeads: @Sendable () -> Bool
    private let syncChanged: @Sendable () -> Void
    private let logger: Logger

    /// How long an in-sync standby may be silent before it is dropped: it says hello at least every
    /// ``ReplicaLink/helloInterval`` (1 s) while it follows.
    static let dropAfter: Duration = .seconds(3)

    /// Binds `endpoint` (`tcp://HOST:PORT`, port `*` for any).
    /// - Parameters:
    ///   - tail: the store's last record when recording starts.
    ///   - epoch: the leader epoch the records are written under.
    ///   - schema: the store's schema fingerprint.
    ///   - snapshots: the copies of the store for standbys the kept records cannot bring on (nil: they are refused).
    ///   - asynchronous: release each write at once, standbys or not (they still get every record).
    ///   - stillLeads: asked before each release: nothing is released once the primary's leadership may have lapsed.
    ///   - syncChanged: told (outside the stage's lock) each time the standbys in sync, or those to drop, change:
    ///     the ``SyncStateKeeper`` then reads ``syncSet``.
    init(
        endpoint: String, context: ZMQContext, tail: ReplicationTail, epoch: Int64, schema: UInt64,
        snapshots: SnapshotSource? = nil, asynchronous: Bool = false,
        stillLeads: @escaping @Sendable () -> Bool = { true },
        syncChanged: @escaping @Sendable () -> Void = {}, logger: Logger
    ) throws {
        let router = try context.makeSocket(.router)
        try router.setLinger(milliseconds: 0)
        // A standby that reconnects under its name takes its place at once.
        try router.setRouterHandover(true)
        self.endpoint = try router.bind(endpoint)
        self.epoch = epoch
        self.schema = schema
        self.asynchronous = asynchronous
        self.snapshots = snapshots
        self.stillLeads = stillLeads
        self.syncChanged = syncChanged
        state = Mutex(State(tail: tail))
        self.logger = logger
        let received = Received()
        loop = try SocketLoop(
            name: "replication", sockets: [.init(router, receives: true, consume: { received.stage?.receive($0) })])
        received.stage = self
    }

    /// Hands ``receive(_:)`` the stage once it exists (the loop is made first).
    private final class Received: @unchecked Sendable {
        // @unchecked: set once, before the loop starts.
        weak var stage: ReplicationStage?
    }

    /// Serves standbys until graceful shutdown, looking each half second for standbys fallen silent and snapshot
    /// copies no longer fetched.
    func run() async throws {
        loop.start()
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                self.dropSilentStandbys()
                self.snapshots?.removeIdleCopies()
            }
        }
        await loop.stop()
        await snapshots?.remove()
    }

    /// Marks each in-sync standby not heard from for ``dropAfter`` to be dropped.
    private func dropSilentStandbys() {
        let now = ContinuousClock.now
        let silent = state.withLock { state -> [String] in
            let silent = state.standbys.filter {
                $0.value.inSync && !$0.value.dropping && now - $0.value.lastHeard > Self.dropAfter
            }
            for name in silent.keys { state.standbys[name]?.dropping = true }
            return silent.keys.sorted()
        }
        guard !silent.isEmpty else { return }
        logger.warning(
            "replication: standby \(silent.joined(separator: ", ")) silent for \(Self.dropAfter): dropped from the sync state once etcd records it"
        )
        syncChanged()
    }

    /// The standbys releases wait for (in sync), and those of them to be dropped: the ``SyncStateKeeper`` records in
    /// etcd those in sync and not dropping, then tells ``dropped(_:)`` which it no longer names.
    var syncSet: (inSync: [String], dropping: [String]) {
        state.withLock { state in
            (
                state.standbys.filter(\.value.inSync).keys.sorted(),
                state.standbys.filter { $0.value.inSync && $0.value.dropping }.keys.sorted()
            )
        }
    }

    /// The cluster's record no longer names `names`: releases stop waiting for them (they are in sync again once they
    /// acknowledge the last record, and then named again).
    func dropped(_ names: [String]) {
        let (release, through) = state.withLock { state -> ((@Sendable (UInt64) -> Void)?, UInt64?) in
            for name in names where state.standbys[name]?.dropping == true {
                state.standbys[name]?.inSync = false
                state.standbys[name]?.dropping = false
            }
            return (state.release, releasable(&state))
        }
        if let release, let through { release(through) }
    }

    /// A record the writer committed (on its thread, in order): kept, and sent to each standby that has every
    /// record before it.
    func recorded(_ record: ReplicationRecord) {
        let frames = ReplicationMessage.record(record, from: epoch).frames
        state.withLock { state in
            state.kept.append(record)
            state.keptBytes += record.changes.count
            while state.keptBytes > Self.keptByteLimit, state.kept.count > 1 {
                state.keptBytes -= state.kept.removeFirst().changes.count
            }
            state.tail = record.tail
            // A primary that no longer leads sends nothing more: a standby could otherwise take what no client was
            // answered for, into the history it goes on with.
            guard state.deposed == nil, stillLeads() else { return }
            // Queued under the lock, so that a standby's catch-up (queued under it too) and the new records reach
            // it in order.
            for (name, standby) in state.standbys where standby.next == record.position {
                state.standbys[name]?.next += 1
                loop.send([standby.id] + frames, on: 0)
            }
        }
    }

    func committed(_ writes: [CommittedWrite], release: @escaping @Sendable (UInt64) -> Void) {
        guard let last = writes.last?.position else { return }
        let through = state.withLock { state -> UInt64? in
            state.release = release
            state.held.append((last, state.tail.position))
            return releasable(&state)
        }
        if let through { release(through) }
    }

    /// The standbys that said hello, by name, with the last record each holds and whether it is in sync.
    var standbys: [(name: String, acknowledged: UInt64, inSync: Bool)] {
        state.withLock { state in
            state.standbys.map { ($0.key, $0.value.acknowledged, $0.value.inSync) }.sorted { $0.name < $1.name }
        }
    }

    /// The stage as its primary's status shows it (``PrimaryReplication/status(of:pipeline:)``): the last record,
    /// each standby with what it acknowledged, and whether writes wait for want of a standby in sync.
    func status(cluster: String, node: String, heldWrites: Int) -> ClusterStatus {
        state.withLock { state in
            let last = state.tail.position
            let now = ContinuousClock.now
            let standbys = state.standbys.sorted { $0.key < $1.key }.map { name, standby in
                ClusterStatus.Standby(
                    name: name, acknowledged: standby.acknowledged, inSync: standby.inSync,
                    lagRecords: last - min(standby.acknowledged, last),
                    connected: now - standby.lastHeard <= Self.dropAfter)
            }
            // Strict: a standby in sync that is gone holds every write until it is dropped.
            let waitingForOne = state.standbys.values.contains { $0.inSync && $0.dropping }
            return ClusterStatus(
                cluster: cluster, node: node, epoch: epoch, asynchronous: asynchronous, lastRecord: last,
                standbys: standbys, heldWrites: UInt64(heldWrites),
                writesBlocked: !asynchronous && (!standbys.contains(where: \.inSync) || waitingForOne))
        }
    }

    /// How many hellos the stage answered (for tests).
    var helloes: Int { state.withLock { $0.helloes } }

    /// Why this primary releases nothing more, once it learnt it was deposed.
    var deposed: String? { state.withLock { $0.deposed } }

    /// Takes out of `held` the writes every standby in sync holds the records of, and returns the last one's
    /// position; nil when none (no standby in sync, or deposed).
    private func releasable(_ state: inout State) -> UInt64? {
        guard state.deposed == nil, !state.held.isEmpty, stillLeads() else { return nil }
        let synced = state.standbys.values.filter(\.inSync)
        let copied: UInt64
        if asynchronous {
            copied = .max
        } else {
            guard let least = synced.map(\.acknowledged).min() else { return nil }
            copied = least
        }
        let count = state.held.prefix { $0.needs <= copied }.count
        guard count > 0 else { return nil }
        defer { state.held.removeFirst(count) }
        return state.held[count - 1].position
    }

    /// A standby's message, on the loop thread.
    private func receive(_ frames: [Data]) {
        guard frames.count > 1, let message = ReplicationMessage(frames: Array(frames.dropFirst())) else {
            logger.warning("replication: a message that is none was dropped (\(frames.count) frames)")
            return
        }
        let id = frames[0]
        let (release, through, note, changed) = state.withLock {
            state -> ((@Sendable (UInt64) -> Void)?, UInt64?, String?, Bool) in
            let wasInSync = Set(state.standbys.filter(\.value.inSync).keys)
            let wasDropping = Set(state.standbys.filter(\.value.dropping).keys)
            var note: String?
            switch message {
            case .hello(let hello):
                note = welcome(id, hello, in: &state)
            case .acknowledged(let position):
                guard let name = state.standbys.first(where: { $0.value.id == id })?.key,
                    var standby = state.standbys[name]
                else {
                    // Not (or no longer) known under this socket: it says hello again when idle.
                    return (nil, nil, nil, false)
                }
                standby.acknowledged = max(standby.acknowledged, position)
                standby.lastHeard = .now
                if standby.acknowledged >= state.tail.position { standby.inSync = true }
                state.standbys[name] = standby
            case .refused(let reason, let staleEpoch):
                // A standby that refuses keeps its place (in sync, it holds the releases) until a hello puts it
                // back on track; one that follows a newer epoch deposes this primary.
                let name = state.standbys.first(where: { $0.value.id == id })?.key ?? "?"
                if staleEpoch { state.deposed = "standby '\(name)' follows a newer epoch than \(epoch)" }
                for (known, standby) in state.standbys where standby.id == id { state.standbys[known]?.next = .max }
                note = "standby '\(name)' refused a record: \(reason)"
            case .snapshotRequest(let generation, let offset):
                let loop = loop
                snapshots?.request(generation: generation, offset: offset, from: id) { id, frames in
                    loop.send([id] + frames, on: 0)
                }
            case .record, .snapshotNeeded, .snapshotChunk:
                note = "a standby sent what only a primary sends; dropped"
            }
            let inSync = Set(state.standbys.filter(\.value.inSync).keys)
            let dropping = Set(state.standbys.filter(\.value.dropping).keys)
            return (state.release, releasable(&state), note, inSync != wasInSync || dropping != wasDropping)
        }
        if let note { logger.warning("replication: \(note)") }
        if changed { syncChanged() }
        if let release, let through { release(through) }
    }

    /// Releases nothing more from now on: the primary lost its leadership (or stops), and what it holds is never
    /// to be acknowledged.
    func depose(_ why: String) {
        state.withLock { state in
            if state.deposed == nil { state.deposed = why }
        }
    }

    /// Takes a standby's hello (under the lock): sends it the kept records after its tail, or says why it cannot
    /// follow from there. Returns what to log.
    private func welcome(_ id: Data, _ hello: ReplicationMessage.Hello, in state: inout State) -> String? {
        state.helloes += 1
        func refuse(_ reason: String) -> String {
            loop.send([id] + ReplicationMessage.refused(reason, staleEpoch: false).frames, on: 0)
            return "standby '\(hello.name)' not taken: \(reason)"
        }
        guard hello.schema == schema else { return refuse("its store's schema differs from the primary's") }
        if hello.promised > epoch {
            state.deposed = "standby '\(hello.name)' promised epoch \(hello.promised), newer than \(epoch)"
            return refuse("this primary's epoch \(epoch) is older than the one it promised, \(hello.promised)")
        }
        let tail = hello.tail
        let last = state.tail
        // What a snapshot replaces: a store this primary's kept records cannot bring on.
        func needsSnapshot(_ reason: String) -> String {
            guard snapshots != nil else { return refuse(reason) }
            loop.send([id] + ReplicationMessage.snapshotNeeded(reason).frames, on: 0)
            return "standby '\(hello.name)' needs a snapshot: \(reason)"
        }
        var records: ArraySlice<ReplicationRecord> = []
        if tail.position == last.position {
            guard tail.hash == last.hash else {
                return needsSnapshot("its last record \(tail.position) is of another history")
            }
        } else if tail.position > last.position {
            // Records of an older epoch than this primary's that it lacks were never acknowledged (it was in sync
            // with their primary when it took over): a deposed primary's. Of its own epoch, this primary lost them.
            guard tail.epoch < epoch else {
                state.deposed = "standby '\(hello.name)' holds records up to \(tail.position), beyond \(last.position)"
                return refuse("it holds records up to \(tail.position), beyond the primary's \(last.position)")
            }
            return needsSnapshot(
                "it holds records up to \(tail.position) of epoch \(tail.epoch), beyond the primary's \(last.position): never acknowledged"
            )
        } else {
            guard let first = state.kept.firstIndex(where: { $0.position == tail.position + 1 }) else {
                return needsSnapshot("it is at record \(tail.position), before the records kept")
            }
            guard state.kept[first].previousHash == tail.hash else {
                return needsSnapshot("its last record \(tail.position) is of another history")
            }
            records = state.kept[first...]
        }
        // Validated: it takes its place again (in sync if it was, or once it holds the last record). One in sync
        // that comes back without records it acknowledged (an older copy of the store) is dropped: the record in
        // etcd must not name it while it lacks them.
        let before = state.standbys[hello.name]
        let wasInSync = before?.inSync == true
        let lostRecords = wasInSync && tail.position < (before?.acknowledged ?? 0)
        state.standbys[hello.name] = Standby(
            id: id, next: last.position + 1, acknowledged: tail.position, inSync: wasInSync || records.isEmpty,
            dropping: before?.dropping == true || lostRecords)
        for record in records { loop.send([id] + ReplicationMessage.record(record, from: epoch).frames, on: 0) }
        return records.isEmpty
            ? nil : "standby '\(hello.name)' at record \(tail.position): sent the \(records.count) after it"
    }
}
