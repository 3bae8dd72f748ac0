import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TributaryCore
import TributaryProtocol

/// The coordinator's reads as a `Service`: the clients' requests once their handlers took them (fetches, history and
/// snapshot pages, job lists, and the answers of their writes, awaited here), each read from a reader connection of
/// the store (GRDB's reader queues), so a subscriber catching up never delays a commit.
///
/// It owns what reads need between requests: how many of each peer's reads are in flight (at most
/// ``CoordinatorLimits/maximumPendingRequestsPerPeer``) and the snapshots being paged through. The server hands
/// it reads with ``submit(peer:requestID:making:)``, which refuses at once
/// when the peer is at its limit; answers go straight to the peer through `reply`.
final class ReaderPool: Service, Sendable {
    /// Snapshots open at once; each holds a read transaction (and so keeps the WAL from being checkpointed).
    static let maximumOpenSnapshots = 16
    /// How long a snapshot nobody asks a page of stays open.
    static let snapshotIdleTime: Duration = .seconds(60)

    typealias Body = Tributary_V1_Envelope.OneOf_Body

    private struct Read: Sendable {
        let peer: Data
        let requestID: UInt64
        let work: @Sendable () async throws -> Body
    }

    private struct State {
        var pending: [Data: Int] = [:]
        var snapshots: [UInt64: (snapshot: StoreSnapshot, lastUsed: ContinuousClock.Instant)] = [:]
        var nextSnapshotID: UInt64 = 0
        /// Reads whose work is running now.
        var running = 0
        /// Set by ``finish()``: no read starts any more.
        var closed = false
        /// ``finish()`` callers waiting for the running reads.
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    private let store: RootStore
    private let limitPerPeer: Int
    private let logger: Logger
    private let reply: @Sendable (Data, UInt64, Body) -> Void
    private let state = Mutex(State())
    private let reads: AsyncStream<Read>
    private let input: AsyncStream<Read>.Continuation

    /// - Parameter reply: sends an answer to a peer (thread-safe: the router's socket loop queues it).
    init(
        store: RootStore, limitPerPeer: Int, logger: Logger,
        reply: @escaping @Sendable (_ peer: Data, _ requestID: UInt64, _ body: Body) -> Void
    ) {
        self.store = store
        self.limitPerPeer = limitPerPeer
        self.logger = logger
        self.reply = reply
        (reads, input) = AsyncStream.makeStream(of: Read.self)
    }

    /// Serves reads, each in a child task, until ``finish()``; then waits for the ones in flight.
    /// Graceful shutdown closes it as ``finish()`` does.
    func run() async {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                for await read in reads {
                    group.addTask { await self.serve(read) }
                }
            }
        } onGracefulShutdown: {
            self.close()
        }
    }

    /// Takes no more reads: those queued and not started are answered `SHUTTING_DOWN`; open snapshots are
    /// released. Reads running go on (``finish()`` waits for them).
    private func close() {
        input.finish()
        state.withLock { state in
            state.closed = true
            state.snapshots.removeAll()
        }
    }

    /// Takes no more reads and returns once the running ones are done, so the store can close: no read opens
    /// a connection after. Reads queued and not started are answered `SHUTTING_DOWN`; open snapshots are
    /// released.
    func finish() async {
        close()
        await withCheckedContinuation { (drained: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.running == 0 { return true }
                state.drained.append(drained)
                return false
            }
            if done { drained.resume() }
        }
    }

    /// Whether ``finish()`` was called: reads are refused.
    var isFinishing: Bool { state.withLock { $0.closed } }

    // MARK: - Taking reads

    /// Takes a place for `peer`, then makes the request's work (`make`: a handler's call, which may queue a write
    /// or open a snapshot) and queues it, to be answered to `peer`. Nothing is made when the peer is at its limit or
    /// the pool is closing, so a request refused here changed nothing.
    /// - Throws: ``ProtocolError`` `TOO_MANY_REQUESTS` naming the limit, `SHUTTING_DOWN`; what `make` threw.
    func submit(
        peer: Data, requestID: UInt64, making make: () throws -> @Sendable () async throws -> Body
    ) throws {
        try state.withLock { state in try take(peer, in: &state) }
        let work: @Sendable () async throws -> Body
        do {
            work = try make()
        } catch {
            release(peer, started: false)
            throw error
        }
        input.yield(Read(peer: peer, requestID: requestID, work: work))
    }

    /// The snapshot `id` to read a page of, or a new one of `entities` when `id` is 0, marked used now.
    /// - Throws: ``ProtocolError``: `INVALID_REQUEST` for too many open snapshots, `UNKNOWN_SNAPSHOT`;
    ///   ``StoreError`` `unknownEntity`.
    func snapshot(_ id: UInt64, entities: Set<String>) throws -> (id: UInt64, snapshot: StoreSnapshot) {
        let fresh = id == 0 ? try store.feed.makeSnapshot(entities: entities) : nil
        return try state.withLock { state -> (UInt64, StoreSnapshot) in
            let opened: (UInt64, StoreSnapshot)
            if let fresh {
                guard !state.closed else { throw Self.stopping }
                guard state.snapshots.count < Self.maximumOpenSnapshots else {
                    throw ProtocolError(
                        .invalidRequest,
                        "\(state.snapshots.count) snapshots are open, the most allowed; finish one or retry in a minute"
                    )
                }
                state.nextSnapshotID += 1
                opened = (state.nextSnapshotID, fresh)
            } else {
                guard let open = state.snapshots[id] else {
                    throw ProtocolError(
                        .unknownSnapshot,
                        "snapshot \(id) is not open (it was finished, or released after 60 s unused)")
                }
                opened = (id, open.snapshot)
            }
            state.snapshots[opened.0] = (opened.1, .now)
            return opened
        }
    }

    /// Forgets a snapshot whose last page was read.
    func snapshotFinished(_ id: UInt64) {
        state.withLock { _ = $0.snapshots.removeValue(forKey: id) }
    }

    /// Releases the snapshots nobody asked a page of for ``snapshotIdleTime``.
    func releaseIdleSnapshots() {
        let cutoff = ContinuousClock.now - Self.snapshotIdleTime
        let released = state.withLock { state -> [UInt64] in
            let idle = state.snapshots.filter { $0.value.lastUsed < cutoff }.map(\.key)
            for id in idle { state.snapshots.removeValue(forKey: id) }
            return idle
        }
        for id in released { logger.info("idle snapshot released", metadata: ["snapshot": "\(id)"]) }
    }

    // MARK: - Serving

    /// Counts one more read in flight for `peer`, or refuses it.
    private func take(_ peer: Data, in state: inout State) throws {
        guard !state.closed else { throw Self.stopping }
        let limit = peer == Self.inProcess ? Self.inProcessLimit : limitPerPeer
        guard state.pending[peer, default: 0] < limit else {
            throw ProtocolError(
                .tooManyRequests,
                "\(limit) of this peer's reads are in flight, the limit (--max-pending-requests); wait for their answers"
            )
        }
        state.pending[peer, default: 0] += 1
    }

    private static let stopping = ProtocolError(.shuttingDown, "the coordinator is stopping")

    /// Answers one read with its result or the error it threw, then frees its place.
    private func serve(_ read: Read) async {
        let starts = state.withLock { state -> Bool in
            if !state.closed { state.running += 1 }
            return !state.closed
        }
        let body: Body
        do {
            guard starts else { throw Self.stopping }
            body = try await read.work()
        } catch let error as ProtocolError {
            body = .error(error.wire)
        } catch let error as StoreError {
            body = .error(ProtocolError(error).wire)
        } catch {
            logger.error("read failed", metadata: ["error": "\(error)"])
            body = .error(ProtocolError(.internal, "\(error)").wire)
        }
        reply(read.peer, read.requestID, body)
        release(read.peer, started: starts)
    }

    /// Frees a read's place: one fewer in flight for `peer`, and, for one that `started`, one fewer running (the
    /// last one lets ``finish()`` return).
    private func release(_ peer: Data, started: Bool) {
        let drained = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            let left = state.pending[peer, default: 1] - 1
            state.pending[peer] = left > 0 ? left : nil
            guard started else { return [] }
            state.running -= 1
            guard state.closed && state.running == 0 else { return [] }
            defer { state.drained.removeAll() }
            return state.drained
        }
        for waiter in drained { waiter.resume() }
    }

    // MARK: - Reads for callers in this process

    /// What the requests of callers in this process (the HTTP routes) are counted under, as one peer: an id no
    /// ZeroMQ peer can have (libzmq's own start with 0, and a peer may not choose one that does).
    static let inProcess = Data([0]) + Data("in-process".utf8)
    /// Most requests of callers in this process in flight at once (the dashboard alone makes five at a time).
    static let inProcessLimit = 32

    /// Takes a place for a caller in this process, then makes its request (`make`: a handler's call, which may queue
    /// a write) and returns the answer: counted among the reads in flight, so that ``finish()`` waits for it. Nothing
    /// is made when the place is refused.
    /// - Throws: what `make` or its work threw; ``ProtocolError`` `SHUTTING_DOWN` once the pool finishes,
    ///   `TOO_MANY_REQUESTS` when ``inProcessLimit`` of this process's requests are in flight.
    nonisolated(nonsending) func run<Value: Sendable>(_ make: () throws -> Promised<Value>) async throws -> Value {
        try state.withLock { state in
            try take(Self.inProcess, in: &state)
            state.running += 1
        }
        defer { release(Self.inProcess, started: true) }
        return try await make().work()
    }
}
