import CPowerLoss
import Foundation
import GRDBSQLite
import Testing

/// The tests that use the power-loss VFS: one at a time, since it watches one directory for the whole process.
@Suite("Power loss", .serialized)
struct PowerLossTests {
    /// The first column of every row `sql` gives on `db`, as text.
    static func strings(_ db: OpaquePointer, _ sql: String) throws -> [String] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            throw HarnessError("\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_finalize(statement) }
        var rows: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            rows.append(sqlite3_column_text(statement, 0).map { String(cString: $0) } ?? "")
        }
        return rows
    }
}

extension PowerLossTests {
    /// The power-loss VFS (Sources/CPowerLoss) checked against SQLite itself, before the coordinator's tests rely on it:
    /// a loop of one-row commits, the power lost at operations spread over the whole run (the random subset of unsynced
    /// writes dropped, some torn), the file opened again. With `synchronous = FULL` every acknowledged commit is there;
    /// with NORMAL some are lost (so the harness does drop what was not synced); with either, the store is intact and
    /// holds a prefix of the commits.
    @Suite("Power loss: the harness against SQLite")
    struct HarnessTests {
        let directory = try! TemporaryDirectory()

        /// What opening the file after the power loss found.
        struct Outcome {
            let acknowledged: Int
            let kept: [Int]
            let integrity: String
        }

        static let commits = 120

        init() {
            #expect(power_loss_register() == SQLITE_OK)
        }

        func open(_ path: String) throws -> OpaquePointer {
            var db: OpaquePointer?
            guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw HarnessError("cannot open \(path)") }
            return db
        }

        func execute(_ db: OpaquePointer, _ sql: String) -> Int32 {
            sqlite3_exec(db, sql, nil, nil, nil)
        }

        /// Runs the commits with the power lost at `crashPoint` (nil: never), then applies the loss with `seed` and
        /// reads what is left. Also returns how many watched operations the run made.
        func run(synchronous: String, crashPoint: Int64?, seed: UInt32, name: String) throws -> (Outcome, Int64) {
            let path = directory.path(name)
            power_loss_watch(directory.url.path)
            var db = try open(path)
            #expect(execute(db, "PRAGMA journal_mode = WAL") == SQLITE_OK)
            #expect(execute(db, "PRAGMA synchronous = \(synchronous)") == SQLITE_OK)
            #expect(execute(db, "PRAGMA wal_autocheckpoint = 0") == SQLITE_OK)
            #expect(execute(db, "CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)") == SQLITE_OK)
            #expect(execute(db, "PRAGMA wal_checkpoint(TRUNCATE)") == SQLITE_OK)
            let start = power_loss_operations()
            if let crashPoint { power_loss_arm(crashPoint) }
            var acknowledged = 0
            for id in 1...Self.commits {
                // A checkpoint now and then: the database file's writes and syncs are in the run too.
                if id % 40 == 0 { _ = execute(db, "PRAGMA wal_checkpoint(PASSIVE)") }
                guard execute(db, "BEGIN IMMEDIATE") == SQLITE_OK else { break }
                guard execute(db, "INSERT INTO t VALUES (\(id), randomblob(\(1_000 + id * 37 % 5_000)))") == SQLITE_OK,
                    execute(db, "COMMIT") == SQLITE_OK
                else {
                    _ = execute(db, "ROLLBACK")
                    break
                }
                acknowledged = id
            }
            let operations = power_loss_operations() - start
            sqlite3_close_v2(db)
            #expect(power_loss_apply(seed, 20) >= 0)
            db = try open(path)
            defer { sqlite3_close_v2(db) }
            let integrity = try PowerLossTests.strings(db, "PRAGMA integrity_check").joined(separator: "; ")
            let kept = try PowerLossTests.strings(db, "SELECT id FROM t ORDER BY id").compactMap { Int($0) }
            return (Outcome(acknowledged: acknowledged, kept: kept, integrity: integrity), operations)
        }

        /// The outcomes at 40 crash points spread over a run without a crash, each with its own seed.
        func crashes(synchronous: String) throws -> [Outcome] {
            let (whole, operations) = try run(
                synchronous: synchronous, crashPoint: nil, seed: 1, name: "\(synchronous)-whole.sqlite")
            #expect(whole.acknowledged == Self.commits)
            // Without a crash the loss still drops what was not synced: nothing at FULL.
            #expect(synchronous == "FULL" ? whole.kept.count == Self.commits : whole.kept.count <= Self.commits)
            #expect(operations > 100, "the run makes enough operations to crash in")
            return try (0..<40).map { index in
                try run(
                    synchronous: synchronous, crashPoint: operations * Int64(index) / 40, seed: UInt32(index + 1),
                    name: "\(synchronous)-\(index).sqlite"
                ).0
            }
        }

        @Test(
            "synchronous FULL: at 40 crash points every acknowledged commit survives, the file is intact, nothing after a gap"
        )
        func full() throws {
            defer { power_loss_watch(nil) }
            for outcome in try crashes(synchronous: "FULL") {
                #expect(outcome.integrity == "ok")
                #expect(outcome.kept == (0..<outcome.kept.count).map { $0 + 1 }, "a prefix of the commits")
                #expect(
                    outcome.kept.count >= outcome.acknowledged,
                    "acknowledged \(outcome.acknowledged), kept \(outcome.kept.count)")
            }
        }

        @Test(
            "synchronous NORMAL: the file is intact and holds a prefix of the commits, and some acknowledged commits are lost"
        )
        func normal() throws {
            defer { power_loss_watch(nil) }
            var lost = 0
            for outcome in try crashes(synchronous: "NORMAL") {
                #expect(outcome.integrity == "ok")
                #expect(outcome.kept == (0..<outcome.kept.count).map { $0 + 1 }, "a prefix of the commits")
                lost += max(0, outcome.acknowledged - outcome.kept.count)
            }
            #expect(lost > 0, "the harness dropped no unsynced commit: it simulates no power loss")
        }
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
