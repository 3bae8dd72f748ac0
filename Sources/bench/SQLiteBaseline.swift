import Foundation
import GRDBSQLite
import TributaryCoordinator
import TributaryCore
import TributaryDemo

/// The import baseline: the same pull requests, users and reviewer rows inserted into the same schema through
/// SQLite's C API directly (`sqlite3_prepare_v2` / `bind` / `step`), with the same pragmas, in 1,000-row
/// transactions. No Tributary or GRDB code runs in its loop; values are prepared before the clock starts.
struct SQLiteBaseline {
    let pullRequests: [DemoData.PullRequest]
    let users: Int
    let path: String

    /// Inserts everything and returns pull requests per second.
    func run() throws -> Double {
        // The schema comes from the store itself, so both sides write the same tables and indexes.
        try RootStore.open(path: path, model: DemoData.model).close()
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BaselineError("cannot open \(path)") }
        defer { sqlite3_close(db) }
        try exec(
            db,
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = \(RootStore.cacheSizePragma)")

        let userIDs = (0..<users).map { _ in ObjectID.make(entity: "User").uuid }
        let ids = pullRequests.map { _ in ObjectID.make(entity: "PullRequest").uuid }
        let logins = (0..<users).map { "user\($0)" }

        let insertUser = try prepare(db, "INSERT INTO User (id, login) VALUES (?, ?)")
        let insertPullRequest = try prepare(
            db,
            """
            INSERT INTO PullRequest (id, number, title, merged, additions, score, createdAt, author)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let insertReviewer = try prepare(
            db, "INSERT OR IGNORE INTO PullRequest_reviewers (source, destination) VALUES (?, ?)")
        defer { [insertUser, insertPullRequest, insertReviewer].forEach { sqlite3_finalize($0) } }

        let started = ContinuousClock.now
        try exec(db, "BEGIN")
        for (index, login) in logins.enumerated() {
            bind(insertUser, 1, userIDs[index])
            sqlite3_bind_text(insertUser, 2, login, -1, transient)
            try step(db, insertUser)
        }
        for (row, pullRequest) in pullRequests.enumerated() {
            if row % 1000 == 0 && row > 0 {
                try exec(db, "COMMIT")
                try exec(db, "BEGIN")
            }
            bind(insertPullRequest, 1, ids[row])
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
            bind(insertPullRequest, 8, userIDs[pullRequest.author])
            try step(db, insertPullRequest)
            for reviewer in pullRequest.reviewers {
                bind(insertReviewer, 1, ids[row])
                bind(insertReviewer, 2, userIDs[reviewer])
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
