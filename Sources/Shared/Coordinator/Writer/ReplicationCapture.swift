import CSQLiteSettings
import Foundation
import GRDB
import Synchronization
import TributaryCore

/// A primary's record of each write transaction for its standbys (docs/failover.md). SQLite's session extension
/// watches the writer connection from BEGIN to COMMIT; before the commit, the rows the transaction changed become a
/// ``ReplicationRecord`` chained to the one before it, and the store's replication row moves to that record in the
/// same transaction, so a store always knows the last record it holds. A transaction that changed no recorded
/// table (a fold of the inverse index, which triggers keep wherever rows are written) makes no record.
///
/// Used inside ``WriterStatements``' transactions, on the writer's thread; ``epoch`` may be set from any thread.
final class ReplicationCapture: @unchecked Sendable {
    // @unchecked: `session`, `tail` and `sealed` are touched only by the writer's transactions, one at a time.
    private var session: OpaquePointer?
    private var tail: ReplicationTail
    private var sealed: ReplicationRecord?
    private let currentEpoch: Mutex<Int64>
    private let deliver: @Sendable (ReplicationRecord) -> Void

    /// - Parameters:
    ///   - tail: the store's replication row as it stands (``ReplicationTail/read(_:)``).
    ///   - epoch: the leader epoch the writes are made under.
    ///   - deliver: takes each record once its transaction committed, in order, on the writer's thread.
    init(tail: ReplicationTail, epoch: Int64, deliver: @escaping @Sendable (ReplicationRecord) -> Void) {
        self.tail = tail
        currentEpoch = Mutex(epoch)
        self.deliver = deliver
    }

    deinit { tributary_session_delete(session) }

    /// The leader epoch the writes are made under from now on.
    var epoch: Int64 {
        get { currentEpoch.withLock { $0 } }
        set { currentEpoch.withLock { $0 = newValue } }
    }

    /// Starts watching a transaction that just began on `connection`.
    func begin(_ connection: OpaquePointer) throws {
        tributary_session_delete(session)
        session = nil
        sealed = nil
        let code = tributary_session_create(connection, &session)
        guard code == SQLITE_OK else {
            throw StoreError(.sqlite, "cannot record the transaction for replication: SQLite error \(code)")
        }
    }

    /// Before COMMIT: the record of what the transaction changed, and the replication row moved to it.
    func seal(_ db: Database, statements: WriterStatements) throws {
        guard let session, tributary_session_is_empty(session) == 0 else { return }
        var size: Int32 = 0
        var bytes: UnsafeMutableRawPointer?
        let code = tributary_session_changeset(session, &size, &bytes)
        defer { sqlite3_free(bytes) }
        guard code == SQLITE_OK else {
            throw StoreError(.sqlite, "cannot record the transaction for replication: SQLite error \(code)")
        }
        // The session may have seen changes that were undone since (a savepoint rolled back): nothing is left.
        guard size > 0, let bytes else { return }
        let record = ReplicationRecord(
            after: tail, epoch: epoch, changes: Data(bytes: bytes, count: Int(size)))
        try record.tail.write(db, statements: statements)
        sealed = record
    }

    /// The transaction committed: its record is the store's last, and goes to the standbys.
    func committed() {
        tributary_session_delete(session)
        session = nil
        guard let record = sealed else { return }
        sealed = nil
        tail = record.tail
        deliver(record)
    }

    /// The transaction was rolled back (or its COMMIT failed): no record. The tail is read again from the store,
    /// in case a COMMIT that reported a failure committed after all.
    func abandoned(_ db: Database) {
        tributary_session_delete(session)
        session = nil
        sealed = nil
        if let stored = try? ReplicationTail.read(db) { tail = stored }
    }
}

extension ReplicationTail {
    /// The last record of the store file at `path`, read with a connection of its own (the store may be open).
    static func read(storeAt path: String) throws -> ReplicationTail {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in try read(db) }
    }

    /// The last record the store's replication row names (``empty`` for a store that has none).
    static func read(_ db: Database) throws -> ReplicationTail {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT position, hash, epoch FROM tributary_replication WHERE id = 1")
        else { return .empty }
        return ReplicationTail(
            position: UInt64(bitPattern: row[0]), hash: UInt64(bitPattern: row[1]), epoch: row[2])
    }

    /// Moves the store's replication row to this tail, inside the caller's transaction.
    func write(_ db: Database, statements: WriterStatements) throws {
        let update = try statements.statement(
            db, "UPDATE tributary_replication SET position = ?1, hash = ?2, epoch = ?3 WHERE id = 1")
        update.bind(1, Int64(bitPattern: position))
        update.bind(2, Int64(bitPattern: hash))
        update.bind(3, epoch)
        try update.execute()
    }
}
