import Foundation
import Logging
import Synchronization

/// A primary's snapshots for standbys that cannot follow from their last record (docs/failover.md): a consistent
/// copy of the store (``RootStore/backup(to:)``: `VACUUM INTO` on a reader, so the primary serves meanwhile), sent
/// in chunks that a standby asks for one at a time. The copy holds the store's replication row, so the standby knows
/// the last record it holds and goes on from the records kept after it.
///
/// Each copy is a generation (a random number, so that a request never names another source's copy). A standby that
/// asks for a new one gets a copy begun after it asked, never one begun before: the copy then holds at least every
/// record the standby acknowledged before. Copies stay while standbys fetch them (two standbys never make each other
/// start again), and go once none has asked for a chunk of them for ``SnapshotFetch/nextAnswer`` (after which the
/// standby gives up) or when the stage stops.
final class SnapshotSource: Sendable {
    /// The most bytes one chunk carries.
    static let chunkBytes = 4 << 20

    /// A copy of the store standbys fetch.
    private struct Copy: Sendable {
        let generation: UInt64
        let path: String
        let size: UInt64
        var lastUsed: ContinuousClock.Instant
    }

    private struct State {
        var copies: [UInt64: Copy] = [:]
        /// Whether a copy is being made, and the standbys that get it.
        var making = false
        var gettingCopyBeingMade: [Data] = []
        /// Standbys that asked while a copy was being made: they get the next one.
        var gettingNextCopy: [Data] = []
        /// Set by ``remove()``: a copy made after is deleted at once.
        var stopped = false
    }

    private let store: RootStore
    private let state = Mutex(State())
    private let logger: Logger

    /// Copies of `store`, made beside it.
    init(store: RootStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Answers a standby's request (on the stage's loop thread, never waiting): a chunk of generation `generation`
    /// from `offset` (read off the thread); for generation 0, the first chunk of a copy begun after this request.
    /// `send` takes the frames of the answer.
    func request(
        generation: UInt64, offset: UInt64, from id: Data, send: @escaping @Sendable (Data, [Data]) -> Void
    ) {
        if generation == 0 {
            let start = state.withLock { state -> Bool in
                // A standby that asks again (its earlier fetch gave up) gets only a copy begun after this request.
                state.gettingCopyBeingMade.removeAll { $0 == id }
                state.gettingNextCopy.removeAll { $0 == id }
                state.gettingNextCopy.append(id)
                return Self.beginCopy(&state)
            }
            if start { make(send: send) }
            return
        }
        let copy = state.withLock { state -> Copy? in
            state.copies[generation]?.lastUsed = .now
            return state.copies[generation]
        }
        guard let copy else {
            send(id, ReplicationMessage.snapshotNeeded("that snapshot is gone: start again").frames)
            return
        }
        Task { send(id, await Self.read(copy, at: offset)) }
    }

    /// Moves the standbys waiting for the next copy to the one about to be made; false when one is being made (it
    /// begins once that one is done) or none waits.
    private static func beginCopy(_ state: inout State) -> Bool {
        guard !state.making, !state.gettingNextCopy.isEmpty, !state.stopped else { return false }
        state.making = true
        state.gettingCopyBeingMade = state.gettingNextCopy
        state.gettingNextCopy = []
        return true
    }

    /// Makes a new copy, sends each standby that gets it its first chunk, and begins the next copy if standbys asked
    /// meanwhile.
    private func make(send: @escaping @Sendable (Data, [Data]) -> Void) {
        let (store, logger) = (store, logger)
        // One copy at a time, then it is done: bounded, so a task rather than a service of its own.
        Task {
            let path = "\(store.path).snapshot-\(UUID().uuidString.prefix(8))"
            var made: Copy?
            do {
                let backup = try await store.backup(to: path)
                logger.notice("replication: snapshot made for standbys (\(backup.bytes) bytes, seq \(backup.lastSeq))")
                made = Copy(
                    generation: UInt64.random(in: 1...UInt64.max), path: path, size: backup.bytes, lastUsed: .now)
            } catch {
                logger.error("replication: cannot make a snapshot for standbys: \(error)")
            }
            let (receivers, unused, next) = state.withLock { state in
                let receivers = state.gettingCopyBeingMade
                state.gettingCopyBeingMade = []
                state.making = false
                var unused: [String] = []
                if let made {
                    if state.stopped { unused.append(made.path) } else { state.copies[made.generation] = made }
                }
                return (receivers, unused, Self.beginCopy(&state))
            }
            await BlockingWork.run {
                for path in unused { _ = unlink(path) }
            }
            for id in receivers {
                if let made {
                    send(id, await Self.read(made, at: 0))
                } else {
                    send(id, ReplicationMessage.snapshotNeeded("the primary could not make a snapshot").frames)
                }
            }
            if next { self.make(send: send) }
        }
    }

    /// ``chunk(of:at:)``, read off the cooperative pool.
    private static func read(_ copy: Copy, at offset: UInt64) async -> [Data] {
        let frames = try? await BlockingWork.run { chunk(of: copy, at: offset) }
        return frames ?? ReplicationMessage.snapshotNeeded("cannot read the snapshot: start again").frames
    }

    /// The frames of the chunk of `copy` at `offset` (a read of at most ``chunkBytes`` from the file).
    private static func chunk(of copy: Copy, at offset: UInt64) -> [Data] {
        guard offset <= copy.size, let file = FileHandle(forReadingAtPath: copy.path) else {
            return ReplicationMessage.snapshotNeeded("no such part of the snapshot: start again").frames
        }
        defer { try? file.close() }
        do {
            try file.seek(toOffset: offset)
            let data = try file.read(upToCount: chunkBytes) ?? Data()
            return ReplicationMessage.snapshotChunk(
                generation: copy.generation, offset: offset, total: copy.size, data: data
            ).frames
        } catch {
            return ReplicationMessage.snapshotNeeded("cannot read the snapshot: \(error)").frames
        }
    }

    /// Deletes the copies no standby asked a chunk of for as long as a standby waits for an answer
    /// (``SnapshotFetch/nextAnswer``): their standbys finished, or gave up. Called by the stage twice a second.
    func removeIdleCopies() {
        let now = ContinuousClock.now
        let idle = state.withLock { state -> [String] in
            let idle = state.copies.values.filter { now - $0.lastUsed > SnapshotFetch.nextAnswer }
            for copy in idle { state.copies[copy.generation] = nil }
            return idle.map(\.path)
        }
        guard !idle.isEmpty else { return }
        Task {
            await BlockingWork.run {
                for path in idle { _ = unlink(path) }
            }
        }
    }

    /// Deletes every copy, and any made from now on (the stage stops).
    func remove() async {
        let paths = state.withLock { state in
            state.stopped = true
            defer { state.copies = [:] }
            return state.copies.values.map(\.path)
        }
        await BlockingWork.run {
            for path in paths { _ = unlink(path) }
        }
    }
}
