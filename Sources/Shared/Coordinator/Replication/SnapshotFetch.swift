import Foundation
import GRDB
import Logging
import ZeroMQ

/// A standby's copy of its primary's snapshot (``SnapshotSource``): fetched chunk by chunk into a file beside the
/// store, synced, checked, then put in the store's place while the store is closed. The snapshot holds the primary's
/// replication row, so the standby then says hello from the last record it holds.
enum SnapshotFetch {
    /// How long the standby waits for an answer: the first one waits while the primary copies its store.
    static let firstAnswer: Duration = .seconds(600)
    static let nextAnswer: Duration = .seconds(30)

    /// Fetches the snapshot of the primary at `primary` (its replication endpoint) into `path`, synced.
    /// - Throws: ``SnapshotError`` when the primary says to start again or does not answer in time.
    static func fetch(from primary: String, name: String, context: ZMQContext, to path: String) async throws
        -> UInt64
    {
        let dealer = try context.makeSocket(.dealer)
        try dealer.setLinger(milliseconds: 0)
        try dealer.setRoutingID(Data(name.utf8))
        try dealer.connect(primary)
        let loop = try SocketLoop(name: "snapshot", sockets: [.init(dealer, receives: true)])
        loop.start()
        let file: FileHandle
        do {
            file = try await BlockingWork.run {
                unlink(path)
                guard FileManager.default.createFile(atPath: path, contents: nil),
                    let file = FileHandle(forWritingAtPath: path)
                else { throw SnapshotError(description: "cannot create \(path)") }
                return file
            }
        } catch {
            await loop.stop()
            throw error
        }
        do {
            let size = try await receive(into: file, over: loop)
            try await BlockingWork.run {
                try file.synchronize()
                try file.close()
            }
            await loop.stop()
            return size
        } catch {
            await loop.stop()
            await BlockingWork.run {
                try? file.close()
                _ = unlink(path)
            }
            throw error
        }
    }

    /// Asks for each chunk in turn and writes it; returns the size once the last one is written.
    private static func receive(into file: FileHandle, over loop: SocketLoop) async throws -> UInt64 {
        var generation: UInt64 = 0
        var offset: UInt64 = 0
        loop.send(ReplicationMessage.snapshotRequest(generation: 0, offset: 0).frames, on: 0)
        let answers = loop.inbound
        while true {
            let wait = generation == 0 ? firstAnswer : nextAnswer
            let batch = try await withThrowingTaskGroup(of: [SocketLoop.Inbound]?.self) { group in
                group.addTask {
                    for await batch in answers { return batch }
                    return nil
                }
                group.addTask {
                    try await Task.sleep(for: wait)
                    throw SnapshotError(description: "the primary did not answer within \(wait)")
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            guard let batch else { throw SnapshotError(description: "the link to the primary closed") }
            for message in batch.compactMap({ ReplicationMessage(frames: $0.frames) }) {
                switch message {
                case .snapshotChunk(let chunkGeneration, let chunkOffset, let total, let data):
                    guard generation == 0 || chunkGeneration == generation, chunkOffset == offset else { continue }
                    generation = chunkGeneration
                    try await BlockingWork.run { try file.write(contentsOf: data) }
                    offset += UInt64(data.count)
                    if offset >= total { return offset }
                    guard !data.isEmpty else { throw SnapshotError(description: "the snapshot ended early") }
                    loop.send(
                        ReplicationMessage.snapshotRequest(generation: generation, offset: offset).frames, on: 0)
                case .snapshotNeeded(let reason):
                    throw SnapshotError(description: "the primary says: \(reason)")
                default:
                    continue
                }
            }
        }
    }

    /// Puts the snapshot at `path` in place of the (closed) store at `storePath`: checked whole (`PRAGMA
    /// quick_check`) and to hold a replication row, its WAL files gone first (the store's own would be replayed over
    /// it), renamed, and the directory synced. Returns the last record it holds.
    static func install(_ path: String, as storePath: String) throws -> ReplicationTail {
        var configuration = Configuration()
        configuration.readonly = true
        let (check, tail) = try DatabaseQueue(path: path, configuration: configuration).read { db in
            (try String.fetchOne(db, sql: "PRAGMA quick_check"), try ReplicationTail.read(db))
        }
        guard check == "ok" else {
            throw SnapshotError(description: "the snapshot fetched is damaged: \(check ?? "no answer to quick_check")")
        }
        for suffix in ["-wal", "-shm"] { unlink(storePath + suffix) }
        guard rename(path, storePath) == 0 else {
            throw SnapshotError(description: "cannot put the snapshot in place: \(String(cString: strerror(errno)))")
        }
        let directory = URL(fileURLWithPath: storePath).deletingLastPathComponent().path
        let fd = open(directory, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
        return tail
    }
}

/// Why a snapshot was not fetched.
struct SnapshotError: Error, CustomStringConvertible {
    let description: String
}
