import Foundation
import GRDB
import Synchronization

/// The current objects of some entities read at one consistent point (a read transaction held open, so commits
/// made meanwhile do not show), handed out in pages of column-wise `INSERT` batches. A subscriber whose history
/// position was pruned loads it and follows the feed after ``seq``.
public final class StoreSnapshot: Sendable {
    /// The last commit the snapshot shows.
    public let seq: UInt64
    private let entities: [Entity]
    private let snapshot: DatabaseSnapshot
    private let cursor = Mutex(Cursor())

    private struct Cursor {
        var entity = 0
        var after: Data?
        var busy = false
    }

    /// Opens a snapshot of `entities` (every entity when empty).
    /// - Throws: ``StoreError`` `unknownEntity` naming an entity the model does not have.
    init(pool: DatabasePool, model: Model, entities: Set<String>) throws {
        for name in entities where model.entity(named: name) == nil {
            let known = model.entities.map(\.name).joined(separator: ", ")
            throw StoreError(.unknownEntity, "unknown entity '\(name)' (the model has \(known))")
        }
        self.entities = model.entities.filter { entities.isEmpty || entities.contains($0.name) }
        snapshot = try pool.makeSnapshot()
        seq = try snapshot.read { db in try RootStore.lastSequenceNumber(db) }
    }

    /// The next page: at most `maxRows` objects, of one entity per batch. `done` tells that it is the last.
    /// - Throws: ``StoreError`` when a page of this snapshot is being read already.
    public func nextPage(maxRows: Int) throws -> (objects: [Tributary_V1_EntityBatch], done: Bool) {
        var position = try cursor.withLock { cursor in
            guard !cursor.busy else {
                throw StoreError(.constraint, "a page of this snapshot is being read; ask for one page at a time")
            }
            cursor.busy = true
            return cursor
        }
        defer {
            cursor.withLock { cursor in
                cursor = position
                cursor.busy = false
            }
        }
        var objects: [Tributary_V1_EntityBatch] = []
        var rows = 0
        try snapshot.read { db in
            while rows < maxRows && position.entity < entities.count {
                let wanted = maxRows - rows
                let batch = try Self.page(of: entities[position.entity], after: position.after, limit: wanted, in: db)
                let count = batch.ids.count / 16
                if count > 0 {
                    objects.append(batch)
                    rows += count
                }
                if count < wanted {
                    position.entity += 1
                    position.after = nil
                } else {
                    position.after = batch.ids.suffix(16)
                }
            }
        }
        return (objects, position.entity >= entities.count)
    }

    /// Up to `limit` objects of `entity` with ids above `after`, in id order.
    private static func page(of entity: Entity, after: Data?, limit: Int, in db: Database) throws
        -> Tributary_V1_EntityBatch
    {
        let toOne = entity.relationships.filter { !$0.isToMany }
        let names = ["id"] + entity.attributes.map(\.name) + toOne.map(\.name)
        let sql = """
            SELECT \(names.map(SQL.quote).joined(separator: ", ")) FROM \(SQL.quote(entity.name))
            WHERE id > ? ORDER BY id LIMIT ?
            """
        var ids = Data()
        var columns =
            entity.attributes.map { ColumnBuilder(name: $0.name, type: $0.type) }
            + toOne.map { ColumnBuilder(name: $0.name, type: .uuid) }
        let cursor = try Row.fetchCursor(db, sql: sql, arguments: [after ?? Data(), limit])
        var row = 0
        while let values = try cursor.next() {
            ids.append(values[0] as Data)
            for index in columns.indices { columns[index].append(values[index + 1] as DatabaseValue, row: row) }
            row += 1
        }
        var batch = Tributary_V1_EntityBatch()
        batch.entity = entity.name
        batch.operation = .insert
        batch.columns = columns.map { $0.finished(rows: row) }
        if row > 0 {
            for relationship in entity.relationships where relationship.isToMany {
                batch.columns.append(try toMany(relationship, of: entity, ids: ids, in: db))
            }
        }
        batch.ids = ids
        return batch
    }

    /// The to-many column of `relationship` for the objects `ids` (in id order), from its join table.
    private static func toMany(_ relationship: Relationship, of entity: Entity, ids: Data, in db: Database) throws
        -> Tributary_V1_Column
    {
        let join = SQL.quote(SQL.joinTable(entity.name, relationship.name))
        let rows = try Row.fetchCursor(
            db,
            sql:
                "SELECT source, destination FROM \(join) WHERE source >= ? AND source <= ? ORDER BY source, destination",
            arguments: [ids.prefix(16), ids.suffix(16)])
        var counts: [Data: UInt32] = [:]
        var targets: [Data: Data] = [:]
        while let row = try rows.next() {
            let source: Data = row[0]
            counts[source, default: 0] += 1
            targets[source, default: Data()].append(row[1] as Data)
        }
        var column = Tributary_V1_Column()
        column.name = relationship.name
        var offset = ids.startIndex
        while offset < ids.endIndex {
            let id = ids[offset..<offset + 16]
            column.counts.append(counts[id] ?? 0)
            column.fixed16.append(targets[id] ?? Data())
            offset += 16
        }
        return column
    }
}

/// Builds one column of a snapshot page from the rows SQLite returns.
private struct ColumnBuilder {
    let type: AttributeType
    var column = Tributary_V1_Column()
    private var nullRows: [Int] = []

    init(name: String, type: AttributeType) {
        self.type = type
        column.name = name
    }

    mutating func append(_ value: DatabaseValue, row: Int) {
        let isNull = value.isNull
        if isNull { nullRows.append(row) }
        switch type {
        case .int, .bool: column.ints.append(isNull ? 0 : Int64.fromDatabaseValue(value) ?? 0)
        case .double, .date: column.doubles.append(isNull ? 0 : Double.fromDatabaseValue(value) ?? 0)
        case .string: column.strings.append(isNull ? "" : String.fromDatabaseValue(value) ?? "")
        case .data: column.blobs.append(isNull ? Data() : Data.fromDatabaseValue(value) ?? Data())
        case .uuid:
            let bytes = isNull ? nil : Data.fromDatabaseValue(value)
            column.fixed16.append(bytes?.count == 16 ? bytes! : Data(NullBitmap.zeroID))
        }
    }

    func finished(rows: Int) -> Tributary_V1_Column {
        var column = column
        if !nullRows.isEmpty {
            var nulls = NullBitmap(rows: rows)
            for row in nullRows { nulls.set(row) }
            column.nulls = nulls.data
        }
        return column
    }
}
