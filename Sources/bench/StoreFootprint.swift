import Foundation
import GRDBSQLite

/// What an imported store takes on disk: the file (and its WAL, if any) after the coordinator stopped, and the
/// bytes of each table and index (SQLite's `dbstat`), so the cost of what only Tributary writes (job payloads,
/// the history with its values, the job rows) shows beside the model's own tables.
struct StoreFootprint {
    let fileBytes: Int
    /// Bytes per table or index, largest first.
    let objects: [(name: String, bytes: Int)]

    init(path: String) throws {
        let size = { (path: String) in
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
        }
        fileBytes = size(path) + size(path + "-wal")
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else {
            sqlite3_close(db)
            throw BaselineError("cannot open \(path)")
        }
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        guard
            sqlite3_prepare_v2(
                db, "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC", -1, &statement, nil)
                == SQLITE_OK
        else {
            // A SQLite built without dbstat: the file size alone.
            objects = []
            return
        }
        defer { sqlite3_finalize(statement) }
        var objects: [(String, Int)] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            objects.append(
                (String(cString: sqlite3_column_text(statement, 0)), Int(sqlite3_column_int64(statement, 1))))
        }
        self.objects = objects
    }

    /// `12.3 MB (1,234 B/row): PullRequest 40%, tributary_payloads 30%, …` for the largest objects.
    func summary(rows: Int) -> String {
        let total = max(1, objects.reduce(0) { $0 + $1.bytes })
        let parts = objects.prefix(6).map { "\($0.name) \(Int((Double($0.bytes) / Double(total) * 100).rounded()))%" }
        return String(format: "%.1f MB", Double(fileBytes) / 1_048_576)
            + " (\(fileBytes / max(1, rows)) B/row): " + parts.joined(separator: ", ")
    }
}
