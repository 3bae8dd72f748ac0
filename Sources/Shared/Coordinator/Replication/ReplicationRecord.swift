import Foundation

/// One write transaction of a primary as its standbys receive it (docs/failover.md): the rows it changed, as a
/// changeset of SQLite's session extension, and its place in the cluster's history, chained to the record before
/// it by hash so that a standby detects a gap or a divergence instead of applying it.
struct ReplicationRecord: Sendable, Equatable {
    /// The leader epoch it was written under.
    let epoch: Int64
    /// Its place: the store's recorded transactions counted from 1 over the cluster's whole history.
    let position: UInt64
    /// The hash of the record before it (0 before the first).
    let previousHash: UInt64
    /// The changeset (`sqlite3session_changeset`).
    let changes: Data
    /// XXH64 of the epoch, position and changes, seeded with ``previousHash``.
    let hash: UInt64

    /// The record of `changes` after `tail`, written under `epoch`.
    init(after tail: ReplicationTail, epoch: Int64, changes: Data) {
        self.epoch = epoch
        position = tail.position + 1
        previousHash = tail.hash
        self.changes = changes
        hash = Self.hash(epoch: epoch, position: position, previous: tail.hash, changes: changes)
    }

    /// A record as received, its hash as sent (checked by ``isIntact``).
    init(epoch: Int64, position: UInt64, previousHash: UInt64, changes: Data, hash: UInt64) {
        self.epoch = epoch
        self.position = position
        self.previousHash = previousHash
        self.changes = changes
        self.hash = hash
    }

    /// Whether the hash is that of the record's own fields.
    var isIntact: Bool {
        hash == Self.hash(epoch: epoch, position: position, previous: previousHash, changes: changes)
    }

    /// The tail a store has once it holds this record.
    var tail: ReplicationTail { ReplicationTail(position: position, hash: hash, epoch: epoch) }

    private static func hash(epoch: Int64, position: UInt64, previous: UInt64, changes: Data) -> UInt64 {
        var header = [UInt8](repeating: 0, count: 16)
        withUnsafeBytes(of: epoch.littleEndian) { header.replaceSubrange(0..<8, with: $0) }
        withUnsafeBytes(of: position.littleEndian) { header.replaceSubrange(8..<16, with: $0) }
        return XXH64.hash(changes, seed: XXH64.hash(header, seed: previous))
    }
}

/// The last record a store holds of its cluster's history (the `tributary_replication` row, written in the
/// transaction of that record).
struct ReplicationTail: Sendable, Equatable {
    /// The record's position (0: none yet).
    var position: UInt64
    /// Its hash (0: none yet).
    var hash: UInt64
    /// The epoch it was written under.
    var epoch: Int64

    static let empty = ReplicationTail(position: 0, hash: 0, epoch: 0)
}
