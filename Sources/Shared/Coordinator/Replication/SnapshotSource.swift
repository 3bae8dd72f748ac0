import Foundation
import Logging
import Synchronization

/// A primary's snapshots for standbys that cannot follow from their last record (docs/failover.md): a consistent
/// copy of the store (``RootStore/backup(to:)``: `VACUUM INTO` on a reader, so the primary serves meanwhile), sent
/// in chunks that a standby asks for one at a time. Each copy is a generation (a random number); a standby that asks for a chunk of one
/// that was replaced starts again. The copy holds the store's replication row, so the standby knows the last record
/// it holds and goes on from the records kept after it.
final class SnapshotSource: Sendable {
    /// The most bytes one chunk carries.
    static let chunkBytes = 4 << 20

    private struct State {
        /// The current copy: its generation, file and size.
        var current: (generation: UInt64, path: String, size: UInt64)?
        /// A copy being made, and the standbys waiting for its first chunk.
        var making = false
        var waiting: [Data] = []
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
    /// from `offset`; for generation 0, the first chunk of a new copy (made off the loop, then sent) or of the one
    /// being made. `send` takes the frames of the answer.
    func request(
        generation: UInt64, offset: UInt64, from id: Data, send: @escaping @Sendable (Data, [Data]) -> Void
    ) {
        if generation == 0 {
            let start = state.withLock { state -> Bool in
                state.waiting.append(id)
                defer { state.making = true }
                return !state.making
            }
            if start { make(send: send) }
            return
        }
        let current = state.withLock { $0.current }
        guard let current, current.generation == generation else {
            send(id, ReplicationMessage.snapshotNeeded("that snapshot was replaced by a newer one: start again").frames)
            return
        }
        send(id, chunk(of: current, at: offset))
    }

    /// Makes a new copy and sends each waiting standby its first chunk.
    private func make(send: @escaping @Sendable (Data, [Data]) -> Void) {
        let (store, logger) = (store, logger)
        // One copy at a time, then it is done: bounded, so a task rather than a service of its own.
        Task {
            let path = "\(store.path).snapshot-\(UUID().uuidString.prefix(8))"
            var made: (generation: UInt64, path: String, size: UInt64)?
            do {
                let backup = try await store.backup(to: path)
                logger.notice("replication: snapshot made for standbys (\(backup.bytes) bytes, seq \(backup.lastSeq))")
                made = (0, path, backup.bytes)
            } catch {
                logger.error("replication: cannot make a snapshot for standbys: \(error)")
            }
            let (waiting, replaced, current) = state.withLock { state in
                defer {
                    state.waiting = []
                    state.making = false
                }
                let replaced = state.current?.path
                if let made {
                    // Random, so that a standby's request never names another source's copy (a primary that leads
                    // again under a stage of its own).
                    state.current = (UInt64.random(in: 1...UInt64.max), made.path, made.size)
                }
                return (state.waiting, made == nil ? nil : replaced, state.current)
            }
            if let replaced { unlink(replaced) }
            for id in waiting {
                if made != nil, let current {
                    send(id, self.chunk(of: current, at: 0))
                } else {
                    send(id, ReplicationMessage.snapshotNeeded("the primary could not make a snapshot").frames)
                }
            }
        }
    }

    /// The frames of the chunk of `snapshot` at `offset` (a read of at most ``chunkBytes`` from the file).
    private func chunk(of snapshot: (generation: UInt64, path: String, size: UInt64), at offset: UInt64) -> [Data] {
        guard offset <= snapshot.size, let file = FileHandle(forReadingAtPath: snapshot.path) else {
            return ReplicationMessage.snapshotNeeded("no such part of the snapshot: start again").frames
        }
        defer { try? file.close() }
        do {
            try file.seek(toOffset: offset)
            let data = try file.read(upToCount: Self.chunkBytes) ?? Data()
            return ReplicationMessage.snapshotChunk(
                generation: snapshot.generation, offset: offset, total: snapshot.size, data: data
            ).frames
        } catch {
            return ReplicationMessage.snapshotNeeded("cannot read the snapshot: \(error)").frames
        }
    }

    /// Deletes the current copy (the stage stops).
    func remove() {
        if let path = state.withLock({ state in
            defer { state.current = nil }
            return state.current?.path
        }) {
            unlink(path)
        }
    }
}
