import Foundation
import GRDBSQLite
import TributaryCoordinator
import TributaryCore
import TributaryDemo

/// The import baselines: the same pull requests, users and reviewer rows inserted through SQLite's C API directly
/// (`sqlite3_prepare_v2` / `bind` / `step`), WAL with `synchronous = NORMAL`. No Tributary or GRDB code runs in the
/// loop; values are prepared before the clock starts.
///
/// - ``Layout/store``, *raw, same schema*: into the store's own tables (created by opening a store), with its
///   16-byte ids beside the row keys and its triggers keeping the inverse index (never folded here), in 1,000-row
///   transactions with a 64 MiB cache: what Tributary's schema costs without Tributary.
/// - ``Layout/integerKeys``, *the limit*: the best layout known for this workload, whatever Tributary's schema
///   is — integer keys, the same unique and relationship indexes, no 16-byte ids — in 50,000-row transactions with
///   a 256 MiB cache.
struct SQLiteBaseline {
    enum Layout {
        case store
        case integerKeys
    }

    let pullRequests: [DemoData.PullRequest]
    let users: Int
    let path: String
    var layout = Layout.store
    var rowsPerTransaction = 1000
    /// The `cache_size` pragma (negative: KiB): 64 MiB, fixed whatever the writer's cache is, so that this
    /// baseline's figures compare across runs and builds.
    var cacheSize = -65_536

    /// Inserts everything and returns pull requests per second.
    func run() throws -> Double {
        if layout == .store {
            // The schema comes from the store itself, so both sides write the same tables and indexes.
            try RootStore.open(path: path, model: DemoData.model).close()
        }
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BaselineError("cannot open \(path)") }
        defer { sqlite3_close(db) }
        try exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = \(cacheSize)")
        if layout == .integerKeys {
            try exec(
                db,
                """
                CREATE TABLE User (id INTEGER PRIMARY KEY, login TEXT NOT NULL UNIQUE, name TEXT);
                CREATE TABLE PullRequest (id INTEGER PRIMARY KEY, number INTEGER NOT NULL UNIQUE, title TEXT NOT NULL,
                    merged INTEGER NOT NULL, additions INTEGER NOT NULL, score REAL, createdAt REAL NOT NULL,
                    author INTEGER);
                CREATE INDEX PullRequest_by_author ON PullRequest(author);
                CREATE TABLE PullRequest_reviewers (source INTEGER NOT NULL, destination INTEGER NOT NULL,
                    PRIMARY KEY (source, destination)) WITHOUT ROWID;
                CREATE INDEX PullRequest_reviewers_by_destination ON PullRequest_reviewers(destination);
                """)
        }
        let withIDs = layout == .store
        let userIDs = (0..<users).map { _ in ObjectID.make(entity: "User").uuid }
        let ids = pullRequests.map { _ in ObjectID.make(entity: "PullRequest").uuid }
        let logins = (0..<users).map { "user\($0)" }

        let insertUser = try prepare(
            db, withIDs ? "INSERT INTO User (id, login) VALUES (?, ?)" : "INSERT INTO User (login) VALUES (?2)")
        let insertPullRequest = try prepare(
            db,
            withIDs
                ? """
                INSERT INTO PullRequest (id, number, title, merged, additions, score, createdAt, author)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
                : """
                INSERT INTO PullRequest (number, title, merged, additions, score, createdAt, author)
                VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8)
                """)
        let insertReviewer = try prepare(
            db, "INSERT OR IGNORE INTO PullRequest_reviewers (source, destination) VALUES (?, ?)")
        defer { [insertUser, insertPullRequest, insertReviewer].forEach { sqlite3_finalize($0) } }

        let started = ContinuousClock.now
        try exec(db, "BEGIN")
        var userKeys: [Int64] = []
        userKeys.reserveCapacity(users)
        for (index, login) in logins.enumerated() {
            if withIDs { bind(insertUser, 1, userIDs[index]) }
            sqlite3_bind_text(insertUser, 2, login, -1, transient)
            try step(db, insertUser)
            userKeys.append(sqlite3_last_insert_rowid(db))
        }
        for (row, pullRequest) in pullRequests.enumerated() {
            if row % rowsPerTransaction == 0 && row > 0 {
                try exec(db, "COMMIT")
                try exec(db, "BEGIN")
            }
            if withIDs { bind(insertPullRequest, 1, ids[row]) }
            sqlite3_bind_int64(insertPullRequest, 2, Int64(pullRequest.number))
            sqlite3_bind_text(insertPullRequest, 3, pullRequest.title, -1, transient)
            sqlite3_bind_int64(insertPullRequest, 4, pullRequest.merged ? 1 : 0)
            sqlite3_bind_int64(insertPullRequest, 5, Int64(pullRequest.additions))
            if let score = pullRequest.score {
                sqlite3_bind_double(insertPullRequest, 6, score)
            } else {
                sqlite3_bind_null(insertPullRequest, 6)
            }
            sqlite3_bind_double(insertPullRequest, 7, pullRequest.createdAt.timeIntervalSince1970)
            sqlite3_bind_int64(insertPullRequest, 8, userKeys[pullRequest.author])
            try step(db, insertPullRequest)
            let source = sqlite3_last_insert_rowid(db)
            for reviewer in pullRequest.reviewers {
                sqlite3_bind_int64(insertReviewer, 1, source)
                sqlite3_bind_int64(insertReviewer, 2, userKeys[reviewer])
                try step(db, insertReviewer)
            }
        }
        try exec(db, "COMMIT")
        return Double(pullRequests.count) / (ContinuousClock.now - started).seconds
    }

    private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private func bind(_ statement: OpaquePointer?, _ index: Int32, _ id: UUID) {
        _ = withUnsafeBytes(of: id.uuid) { sqlite3_bind_blob(statement, index, $0.baseAddress, 16, transient) }
    }

    private func prepare(_ db: OpaquePointer, _ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            throw BaselineError(String(cString: sqlite3_errmsg(db)))
        }
        return statement
    }

    private func step(_ db: OpaquePointer, _ statement: OpaquePointer?) throws {
        defer { sqlite3_reset(statement) }
        guard sqlite3_step(statement) == SQLITE_DONE else { throw BaselineError(String(cString: sqlite3_errmsg(db))) }
    }

    private func exec(_ db: OpaquePointer, _ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw BaselineError(String(cString: sqlite3_errmsg(db)))
        }
    }
}

struct BaselineError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
