import CSQLiteSettings
import Foundation
import GRDB
import TributaryCore

/// Why a standby's store refused a primary's record (docs/failover.md); nothing of the record was written.
struct ReplicationRefusal: Error, CustomStringConvertible, Equatable {
    enum Reason: Sendable, Equatable {
        /// Sent by a primary of an epoch older than the newest the store promised to follow: a deposed one.
        case staleEpoch
        /// Not the record after the store's last: one or more are missing between them.
        case gap
        /// The record after the store's last, but chained to another history.
        case diverged
        /// Its hash is not that of its contents.
        case damaged
        /// Its rows are not those the store holds (a row it inserts exists, or one it changes differs).
        case conflict
    }

    let reason: Reason
    let description: String
}

/// A standby's writes of the replication (docs/failover.md), as cases of the writer's queue.
extension StoreWrite {
    /// A primary's record applied in one synced transaction with the store's replication row, so the store is
    /// always at a record's end. A record the store holds already (its last, sent again) changes nothing.
    /// - Throws: ``ReplicationRefusal`` for a record of an older epoch than the store promised, one that does not
    ///   follow the store's last record, one whose hash does not match, or one whose rows conflict with the store's.
    static func applyRecord(_ record: ReplicationRecord, from epoch: Int64) -> StoreWrite<ReplicationTail> {
        .init(name: "apply replication record", synced: true) { store, db in
            try ReplicaApply.apply(record, from: epoch, in: db, statements: store.writer.statements)
        }
    }

    /// Records applied in order in one synced transaction, up to the first the store refuses (those before it
    /// stay applied). Returns the store's last record after them and the refusal.
    static func applyRecords(_ records: [ReplicationRecord], from epoch: Int64)
        -> StoreWrite<(ReplicationTail, ReplicationRefusal?)>
    {
        .init(name: "apply replication records", synced: true) { store, db in
            var tail = try ReplicationTail.read(db)
            for record in records {
                do {
                    tail = try ReplicaApply.apply(record, from: epoch, in: db, statements: store.writer.statements)
                } catch let refusal as ReplicationRefusal {
                    return (tail, refusal)
                }
            }
            return (tail, nil)
        }
    }

    /// The store promises to follow leader epoch `epoch` (or a newer one it promised before): records of older
    /// epochs are refused from now on. Returns the epoch promised.
    static func promise(epoch: Int64) -> StoreWrite<Int64> {
        .init(name: "promise replication epoch", synced: true) { _, db in try ReplicaApply.promise(epoch, in: db) }
    }
}

/// How a standby's store takes a record: checked against its replication row, then applied with SQLite's
/// `sqlite3changeset_apply`, stopping at the first conflict. The store's triggers run as the rows are written, so
/// its derived tables (the inverse index, not in records) follow.
enum ReplicaApply {
    /// Applies `record`, sent by a primary leading under `epoch`.
    static func apply(_ record: ReplicationRecord, from epoch: Int64, in db: Database, statements: WriterStatements)
        throws
        -> ReplicationTail
    {
        let tail = try ReplicationTail.read(db)
        let promised = try Self.promised(in: db)
        guard record.isIntact else {
            throw ReplicationRefusal(
                reason: .damaged, description: "record \(record.position) does not match its hash")
        }
        // The sender's epoch, not the record's: a new primary sends a returning standby records of the epochs
        // before its own.
        guard epoch >= promised else {
            throw ReplicationRefusal(
                reason: .staleEpoch,
                description:
                    "record \(record.position) comes from a primary of epoch \(epoch); this store follows epoch \(promised)"
            )
        }
        // Sent again (a hello crossed records on their way): what the store holds already changes nothing. One of
        // another history at those positions shows in the next new record, whose previous hash differs.
        if record.position < tail.position || (record.position == tail.position && record.hash == tail.hash) {
            return tail
        }
        guard record.position == tail.position + 1 else {
            throw ReplicationRefusal(
                reason: .gap,
                description: "record \(record.position) does not follow this store's last, \(tail.position)")
        }
        guard record.previousHash == tail.hash else {
            throw ReplicationRefusal(
                reason: .diverged,
                description:
                    "record \(record.position) follows another history than this store's record \(tail.position)")
        }
        guard let connection = db.sqliteConnection else {
            throw StoreError(.sqlite, "the store connection is closed")
        }
        guard record.changes.count < Int(Int32.max) else {
            throw StoreError(.sqlite, "record \(record.position) is too large to apply (\(record.changes.count) bytes)")
        }
        var conflict = [CChar](repeating: 0, count: 256)
        let code = record.changes.withUnsafeBytes { bytes in
            tributary_changeset_apply(connection, Int32(bytes.count), bytes.baseAddress, &conflict, conflict.count)
        }
        guard code == SQLITE_OK else {
            let what = String(decoding: conflict.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if code == SQLITE_ABORT {
                throw ReplicationRefusal(
                    reason: .conflict, description: "record \(record.position) conflicts with this store: \(what)")
            }
            throw StoreError(.sqlite, "cannot apply record \(record.position): SQLite error \(code) \(what)")
        }
        try record.tail.write(db, statements: statements)
        try promise(epoch, in: db)
        return record.tail
    }

    /// The newest leader epoch the store promised to follow (0: none).
    static func promised(in db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT promised FROM tributary_replication WHERE id = 1") ?? 0
    }

    /// The store promises to follow `epoch` or a newer one it promised before; returns the epoch promised.
    @discardableResult
    static func promise(_ epoch: Int64, in db: Database) throws -> Int64 {
        try db.execute(
            sql: "UPDATE tributary_replication SET promised = max(promised, ?) WHERE id = 1", arguments: [epoch])
        return try Int64.fetchOne(db, sql: "SELECT promised FROM tributary_replication WHERE id = 1") ?? epoch
    }
}
