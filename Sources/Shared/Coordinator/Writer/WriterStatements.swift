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

    init(durability: Durability) {
        self.durability = durability
    }

    /// The statement for `sql`, prepared on first use. Only fixed SQL comes here (the set is small and bounded).
    func statement(_ db: Database, _ sql: String) throws -> SQLiteStatement {
        if let cached = statements[sql] { return cached }
        guard let connection = db.sqliteConnection else { throw StoreError(.sqlite, "the store connection is closed") }
        let statement = try SQLiteStatement(connection: connection, sql: sql)
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
        try statement(db, "BEGIN IMMEDIATE").execute()
        do {
            let value = try body()
            try statement(db, "COMMIT").execute()
            return value
        } catch {
            if let connection = db.sqliteConnection, sqlite3_get_autocommit(connection) == 0 {
                try? statement(db, "ROLLBACK").execute()
            }
            throw error
        }
    }

    /// Throws unless the connection is inside a transaction. SQLite rolls a whole transaction back on some errors
    /// (a full disk, say): a write after that would commit on its own, so it is refused.
    func requireTransaction(_ db: Database) throws {
        guard let connection = db.sqliteConnection, sqlite3_get_autocommit(connection) == 0 else {
            throw StoreError(.sqlite, "the write transaction was rolled back by SQLite")
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
            if sqlite3_get_autocommit(connection) == 0 {
                try statement(db, "ROLLBACK TO tributary_save").execute()
                try statement(db, "RELEASE tributary_save").execute()
            }
            throw error
        }
    }
}
