import Foundation
import TributaryCore

/// A to-many relationship's join rows gathered while change sets are applied, written many per statement and in
/// the order of the join table's reverse index.
///
/// One `INSERT` of 32 rows instead of 32: each single-row insert opens and closes cursors on the join table and the
/// tables its trigger writes, and an import writes several join rows per row it imports. Sorted by destination: the
/// relationship's index by destination (``InverseIndex``'s recent half, filled by the join table's trigger) takes
/// the rows of a whole group commit in key order, so each of its leaf pages is read and changed once per commit
/// instead of once per row (the sources, new row keys, land together at the end of the table either way). That
/// counts most where an index outgrows the writer's cache (see docs/benchmarks.md, 'Scaling').
struct JoinRows {
    /// One join row: the row keys of the source and of the destination.
    struct Row {
        let source: Int64
        let destination: Int64
    }

    let entity: String
    let relationship: String
    private(set) var rows: [Row] = []

    /// Rows per multi-row statement: 64 parameters, enough to spread a statement's fixed cost over many rows while
    /// a batch's remainder (written one row per statement) stays small.
    static let perStatement = 32

    init(entity: String, relationship: String) {
        self.entity = entity
        self.relationship = relationship
    }

    var isEmpty: Bool { rows.isEmpty }

    mutating func append(source: Int64, destination: Int64) {
        rows.append(Row(source: source, destination: destination))
    }

    /// Puts the rows in the reverse index's order: by destination, then source.
    mutating func sort() {
        rows.sort { ($0.destination, $0.source) < ($1.destination, $1.source) }
    }

    mutating func removeAll() {
        rows.removeAll(keepingCapacity: true)
    }
}

extension ChangeSetMerger {
    /// Writes the gathered join rows (ignoring rows the table has), sorted, and empties the buffer.
    func writeJoinRows(_ buffer: inout JoinRows, connection: OpaquePointer) throws {
        guard !buffer.isEmpty else { return }
        // Sorted in place and emptied keeping its room (the rows are only lent to the insert): a copy to sort
        // would allocate one per flush.
        defer { buffer.removeAll() }
        buffer.sort()
        try insertJoinRows(buffer.rows, into: buffer.entity, buffer.relationship, connection: connection)
    }

    private func insertJoinRows(
        _ rows: [JoinRows.Row], into entity: String, _ relationship: String, connection: OpaquePointer
    ) throws {
        var index = 0
        if rows.count >= JoinRows.perStatement {
            let join = SQLText.quote(SQLText.joinTable(entity, relationship))
            let values = Array(repeating: "(?, ?)", count: JoinRows.perStatement).joined(separator: ", ")
            let many = try statement(
                connection, "INSERT OR IGNORE INTO \(join) (source, destination) VALUES \(values)")
            while rows.count - index >= JoinRows.perStatement {
                for offset in 0..<JoinRows.perStatement {
                    let row = rows[index + offset]
                    many.bind(Int32(2 * offset + 1), row.source)
                    many.bind(Int32(2 * offset + 2), row.destination)
                }
                try many.execute()
                index += JoinRows.perStatement
            }
        }
        guard index < rows.count else { return }
        let (_, add) = try joinStatements(entity, relationship, connection: connection)
        for row in rows[index...] {
            add.bind(1, row.source)
            add.bind(2, row.destination)
            try add.execute()
        }
    }
}
