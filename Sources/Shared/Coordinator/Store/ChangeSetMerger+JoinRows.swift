import Foundation
import TributaryCore

/// A to-many relationship's join rows gathered while an insert or update batch is applied, written many per
/// statement at the end of the batch (or before a clear of the same table): one `INSERT` of 32 rows instead of 32,
/// each of which opened and closed cursors on the join table and its index (`sqlite3_reset` was 5% of the writer,
/// and the import writes ~3 join rows per pull request).
struct JoinRows {
    let entity: String
    let relationship: String
    /// Source and destination row keys, alternating.
    private(set) var keys: [Int64] = []

    /// Rows per multi-row statement: 64 parameters, enough to spread a statement's fixed cost over many rows while
    /// a batch's remainder (written one row per statement) stays small.
    static let perStatement = 32

    init(entity: String, relationship: String) {
        self.entity = entity
        self.relationship = relationship
    }

    var isEmpty: Bool { keys.isEmpty }

    mutating func append(source: Int64, destination: Int64) {
        keys.append(source)
        keys.append(destination)
    }

    mutating func removeAll() {
        keys.removeAll(keepingCapacity: true)
    }
}

extension ChangeSetMerger {
    /// Writes the gathered join rows (ignoring rows the table has) and empties the buffer.
    func writeJoinRows(_ rows: inout JoinRows, connection: OpaquePointer) throws {
        guard !rows.isEmpty else { return }
        defer { rows.removeAll() }
        let keys = rows.keys
        let chunk = JoinRows.perStatement * 2
        var index = 0
        if keys.count >= chunk {
            let join = SQLText.quote(SQLText.joinTable(rows.entity, rows.relationship))
            let values = Array(repeating: "(?, ?)", count: JoinRows.perStatement).joined(separator: ", ")
            let many = try statement(
                connection, "INSERT OR IGNORE INTO \(join) (source, destination) VALUES \(values)")
            while keys.count - index >= chunk {
                for offset in 0..<chunk { many.bind(Int32(offset + 1), keys[index + offset]) }
                try many.execute()
                index += chunk
            }
        }
        guard index < keys.count else { return }
        let (_, add) = try joinStatements(rows.entity, rows.relationship, connection: connection)
        while index < keys.count {
            add.bind(1, keys[index])
            add.bind(2, keys[index + 1])
            try add.execute()
            index += 2
        }
    }
}
