import Foundation
import GRDB

/// The messages between a primary and its standbys (docs/failover.md), as ZeroMQ frames: a kind, then a fixed header
/// of little-endian integers, then for a record its changeset. A coordinator-to-coordinator link, so no protobuf: the
/// record's bytes go as they are, and both ends are the same build.
enum ReplicationMessage: Sendable, Equatable {
    /// What a standby says when it connects, and again whenever it has heard nothing for a while.
    struct Hello: Sendable, Equatable {
        /// Its name in the cluster.
        var name: String
        /// The last record its store holds.
        var tail: ReplicationTail
        /// The newest leader epoch it promised to follow.
        var promised: Int64
        /// Its store's schema (``SchemaFingerprint``).
        var schema: UInt64
    }

    /// A standby introduces itself.
    case hello(Hello)
    /// A record for the standby to apply, sent by a primary leading under epoch `from` (the record itself may be of
    /// an earlier epoch: a new primary sends a returning standby the records before its own).
    case record(ReplicationRecord, from: Int64)
    /// The standby's store holds every record through this position, durably.
    case acknowledged(UInt64)
    /// The receiver will not take what was sent, and why; `staleEpoch` when the sender's epoch is older than the
    /// receiver follows (the sender was deposed).
    case refused(String, staleEpoch: Bool)
    /// The primary cannot bring the standby's store on from its last record (it is behind the records kept, or holds
    /// records of another history, never acknowledged): the standby replaces it with a snapshot, and why.
    case snapshotNeeded(String)
    /// The standby asks for the primary's snapshot `generation` from byte `offset` on (generation 0: a new one).
    case snapshotRequest(generation: UInt64, offset: UInt64)
    /// Part of snapshot `generation`: `data` at `offset` of a file of `total` bytes.
    case snapshotChunk(generation: UInt64, offset: UInt64, total: UInt64, data: Data)

    /// The frames of the message.
    var frames: [Data] {
        switch self {
        case .hello(let hello):
            return [
                Data("HELLO".utf8), Data(hello.name.utf8),
                Self.header(
                    hello.tail.position, hello.tail.hash, UInt64(bitPattern: hello.tail.epoch),
                    UInt64(bitPattern: hello.promised), hello.schema),
            ]
        case .record(let record, let sender):
            return [
                Data("RECORD".utf8),
                Self.header(
                    UInt64(bitPattern: sender), UInt64(bitPattern: record.epoch), record.position, record.previousHash,
                    record.hash),
                record.changes,
            ]
        case .acknowledged(let position):
            return [Data("ACK".utf8), Self.header(position)]
        case .refused(let reason, let staleEpoch):
            return [Data("REFUSED".utf8), Data(reason.utf8), Self.header(staleEpoch ? 1 : 0)]
        case .snapshotNeeded(let reason):
            return [Data("SNAPSHOT-NEEDED".utf8), Data(reason.utf8)]
        case .snapshotRequest(let generation, let offset):
            return [Data("SNAPSHOT-GET".utf8), Self.header(generation, offset)]
        case .snapshotChunk(let generation, let offset, let total, let data):
            return [Data("SNAPSHOT-CHUNK".utf8), Self.header(generation, offset, total), data]
        }
    }

    /// Reads frames; nil for frames that are no such message.
    init?(frames: [Data]) {
        guard let kind = frames.first.map({ String(decoding: $0, as: UTF8.self) }) else { return nil }
        switch (kind, frames.count) {
        case ("HELLO", 3):
            guard let words = Self.words(frames[2], count: 5) else { return nil }
            self = .hello(
                Hello(
                    name: String(decoding: frames[1], as: UTF8.self),
                    tail: ReplicationTail(position: words[0], hash: words[1], epoch: Int64(bitPattern: words[2])),
                    promised: Int64(bitPattern: words[3]), schema: words[4]))
        case ("RECORD", 3):
            guard let words = Self.words(frames[1], count: 5) else { return nil }
            self = .record(
                ReplicationRecord(
                    epoch: Int64(bitPattern: words[1]), position: words[2], previousHash: words[3], changes: frames[2],
                    hash: words[4]),
                from: Int64(bitPattern: words[0]))
        case ("ACK", 2):
            guard let words = Self.words(frames[1], count: 1) else { return nil }
            self = .acknowledged(words[0])
        case ("REFUSED", 3):
            guard let words = Self.words(frames[2], count: 1) else { return nil }
            self = .refused(String(decoding: frames[1], as: UTF8.self), staleEpoch: words[0] == 1)
        case ("SNAPSHOT-NEEDED", 2):
            self = .snapshotNeeded(String(decoding: frames[1], as: UTF8.self))
        case ("SNAPSHOT-GET", 2):
            guard let words = Self.words(frames[1], count: 2) else { return nil }
            self = .snapshotRequest(generation: words[0], offset: words[1])
        case ("SNAPSHOT-CHUNK", 3):
            guard let words = Self.words(frames[1], count: 3) else { return nil }
            self = .snapshotChunk(generation: words[0], offset: words[1], total: words[2], data: frames[2])
        default:
            return nil
        }
    }

    private static func header(_ words: UInt64...) -> Data {
        var data = Data(capacity: words.count * 8)
        for word in words { withUnsafeBytes(of: word.littleEndian) { data.append(contentsOf: $0) } }
        return data
    }

    private static func words(_ data: Data, count: Int) -> [UInt64]? {
        guard data.count == count * 8 else { return nil }
        return data.withUnsafeBytes { bytes in
            (0..<count).map { UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)) }
        }
    }
}

/// A store's schema as one number: XXH64 of every table's and index's SQL, in name order (the replication row and the
/// inverse index left out, as records leave them out). Two stores a changeset can pass between without a row
/// silently skipped have the same one: `sqlite3changeset_apply` skips a change to a table the target lacks or has in
/// another shape.
enum SchemaFingerprint {
    static func read(_ db: Database) throws -> UInt64 {
        let sql = try String.fetchAll(
            db,
            sql: """
                SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master
                WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE 'tributary_inverse%'
                    AND name NOT LIKE 'tributary_replication%' AND type IN ('table', 'index')
                ORDER BY name
                """)
        return XXH64.hash(Array(sql.joined(separator: "\n").utf8))
    }
}
