import Foundation
import GRDB
import GRDBSQLite
import TributaryCore

/// The root writer's hot-path statements outside the merge (transactions, savepoints, lease checks, job progress,
/// claims), prepared once on the writer connection and run through SQLite's C API.
///
/// GRDB's `execute(sql:)` parses BEGIN/COMMIT/SAVEPOINT on every call, and for statements this small its argument
/// arrays and row copies cost more than the statements they run; every job passes through several of them. Used
/// only inside the writer's closures, which GRDB runs one at a time.
final class WriterStatements {
    private var statements: [String: SQLiteStatement] = [:]
    /// The writer connection's level (its `synchronous` pragma, set when it opened).
    let durability: Durability
    /// Whether the store can be written, as the transactions run here find.
    let writability: StoreWritability
    /// The open transaction's first failure meaning the store cannot be written (noted by these statements and
    /// the merger's).
    let fault = TransactionFault()
    /// Records each transaction for the standbys while the store is a cluster's primary; nil otherwise. Set on the
    /// writer's connection, between transactions.
    var capture: ReplicationCapture?

    init(durability: Durability, writability: StoreWritability) {
        self.durability = durability
        self.writability = writability
    }

    /// The statement for `sql`, prepared on first use. Only fixed SQL comes here (the set is small and bounded).
    func statement(_ db: Database, _ sql: String) throws -> SQLiteStatement {
        if let cached = statements[sql] { return cached }
        guard let connection = db.sqliteConnection else { throw StoreError(.sqlite, "the store connection is closed") }
        let statement = try SQLiteStatement(connection: connection, sql: sql, fault: fault)
        statements[sql] = statement
        return statement
    }

    /// Finalizes the statements; call before the connection closes.
    func finalize() {
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
    }

    /// Runs `body` in one write transaction (BEGIN IMMEDIATE … COMMIT), rolled back when it throws. With `synced`,
    /// the commit is synced to the disk before this returns whatever the store's ``Durability`` (a push, a command a
    /// client is told is done); otherwise as the level says.
    func transaction<T>(_ db: Database, synced: Bool = false, _ body: () throws -> T) throws -> T {
        guard synced, durability != .full else { return try transaction(db, body) }
        try statement(db, "PRAGMA synchronous = FULL").execute()
        defer { try? statement(db, "PRAGMA synchronous = \(durability.pragma)").execute() }
        return try transaction(db, body)
    }

    private func transaction<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        fault.reset()
        do {
            try statement(db, "BEGIN IMMEDIATE").execute()
            if let capture, let connection = db.sqliteConnection { try capture.begin(connection) }
            let changesBefore = db.sqliteConnection.map { sqlite3_total_changes64($0) }
            let value = try body()
            try capture?.seal(db, statements: self)
            try statement(db, "COMMIT").execute()
            capture?.committed()
            if let refused = fault.first {
                // Some of it was refused (a save, a claim) though the rest committed.
                writability.refused(Self.reason(refused))
            } else if db.sqliteConnection.map({ sqlite3_total_changes64($0) }) != changesBefore {
                writability.written()
            }
            return value
        } catch {
            if let connection = db.sqliteConnection, sqlite3_get_autocommit(connection) == 0 {
                try? statement(db, "ROLLBACK").execute()
            }
            capture?.abandoned(db)
            let error = noting(error, db)
            guard let refused = fault.first else { throw error }
            writability.refused(Self.reason(refused))
            // A store error after SQLite rolled the transaction back for a full disk failed for that (other errors,
            // such as the group commit's call for savepoints, go through as they are).
            throw (error as? StoreError)?.code == .sqlite ? refused : error
        }
    }

    /// `error`, as ``StoreError/Code/unwritable`` when it means that the store cannot be written (then noted as the
    /// transaction's ``fault``).
    private func noting(_ error: any Error, _ db: Database) -> any Error {
        let error = StoreFault.classify(error, connection: db.sqliteConnection)
        if let error = error as? StoreError { fault.note(error) }
        return error
    }

    /// The cause in an unwritable error's message ("its disk is full (…)").
    private static func reason(_ error: StoreError) -> String {
        String(error.message.trimmingPrefix("the store cannot be written: "))
    }

    /// Throws unless the connection is inside a transaction. SQLite rolls a whole transaction back on some errors
    /// (a full disk when its cache spills, say): a write after that would commit on its own, so it is refused, with
    /// the failure that rolled the transaction back when that one meant the store cannot be written.
    func requireTransaction(_ db: Database) throws {
        guard let connection = db.sqliteConnection, sqlite3_get_autocommit(connection) == 0 else {
            throw fault.first ?? StoreError(.sqlite, "the write transaction was rolled back by SQLite")
        }
    }

    /// Runs `body` in a savepoint of the open transaction: what it wrote is undone when it throws, and the
    /// transaction goes on.
    func savepoint<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        try requireTransaction(db)
        guard let connection = db.sqliteConnection else { throw StoreError(.sqlite, "the store connection is closed") }
        try statement(db, "SAVEPOINT tributary_save").execute()
        do {
            let value = try body()
            try statement(db, "RELEASE tributary_save").execute()
            return value
        } catch {
            let error = noting(error, db)
            if sqlite3_get_autocommit(connection) == 0 {
                try statement(db, "ROLLBACK TO tributary_save").execute()
                try statement(db, "RELEASE tributary_save").execute()
            }
            throw error
        }
    }
}
