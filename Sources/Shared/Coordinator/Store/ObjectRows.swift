import Foundation
import GRDB
import TributaryCore
import TributaryProtocol

/// Reads stored objects into one column-wise batch: ids, versions, and every attribute and relationship. Snapshot
/// pages, fetch replies and the objects of resolved merge conflicts are all made by it.
enum ObjectRows {
    /// Bound parameters per `IN (…)` list, well under SQLite's limit of 32,766.
    static let idsPerQuery = 500

    /// The objects of `entity` that `condition` selects, in `order` (SQL after `ORDER BY`), at most `limit`
    /// after skipping `offset`. With `contiguousIDs` (the caller selects every object in a range of ids, in id
    /// order: a snapshot page), to-many relationships are read in one range scan of the join table rather than
    /// by the objects' ids.
    static func read(
        _ entity: Entity, where condition: String = "1", arguments: [DatabaseValue] = [], order: String = "\"id\"",
        limit: Int? = nil, offset: Int = 0, contiguousIDs: Bool = false, in db: Database
    ) throws -> Tributary_V1_EntityBatch {
        let toOne = entity.relationships.filter { !$0.isToMany }
        // Text is read as its bytes: GRDB's text values end at a NUL character, which a string may hold.
        let attributes = entity.attributes.map { attribute in
            attribute.type == .string ? "CAST(\(SQLText.quote(attribute.name)) AS BLOB)" : SQLText.quote(attribute.name)
        }
        let selected =
            ["\"id\"", "\"_version\""] + attributes
            + toOne.map { SQLText.toOneID(table: entity.name, relationship: $0.name, destination: $0.destination) }
        var sql = """
            SELECT \(selected.joined(separator: ", ")) FROM \(SQLText.quote(entity.name))
            WHERE \(condition) ORDER BY \(order)
            """
        var bound = arguments
        if limit != nil || offset > 0 {
            sql += " LIMIT ? OFFSET ?"
            bound += [(limit ?? -1).databaseValue, offset.databaseValue]
        }
        var ids = Data()
        var versions: [UInt64] = []
        var columns =
            entity.attributes.map { ColumnBuilder(name: $0.name, type: $0.type) }
            + toOne.map { ColumnBuilder(name: $0.name, type: .uuid) }
        let cursor = try Row.fetchCursor(db, sql: sql, arguments: StatementArguments(bound))
        var row = 0
        while let values = try cursor.next() {
            ids.append(values[0] as Data)
            versions.append(UInt64(max(0, values[1] as Int64)))
            for index in columns.indices { columns[index].append(values[index + 2] as DatabaseValue, row: row) }
            row += 1
        }
        var batch = Tributary_V1_EntityBatch()
        batch.entity = entity.name
        batch.operation = .insert
        batch.columns = columns.map { $0.finished(rows: row) }
        batch.versions = versions
        if row > 0 {
            let ordered = contiguousIDs && order == "\"id\""
            for relationship in entity.relationships where relationship.isToMany {
                batch.columns.append(try toMany(relationship, of: entity, ids: ids, idOrdered: ordered, in: db))
            }
        }
        batch.ids = ids
        return batch
    }

    /// The objects with `ids` that still exist, in id order.
    static func read(_ entity: Entity, ids: [UUID], in db: Database) throws -> Tributary_V1_EntityBatch {
        var batch = Tributary_V1_EntityBatch()
        batch.entity = entity.name
        batch.operation = .insert
        let sorted = ids.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        for start in stride(from: 0, to: sorted.count, by: idsPerQuery) {
            let chunk = sorted[start..<min(start + idsPerQuery, sorted.count)]
            let page = try read(
                entity, where: "\"id\" IN (\(SQLText.placeholders(chunk.count)))",
                arguments: chunk.map { $0.bytes.databaseValue }, in: db)
            batch.append(page)
        }
        return batch
    }

    /// The to-many column of `relationship` for the objects `ids` (in the batch's order), from its join table.
    private static func toMany(
        _ relationship: Relationship, of entity: Entity, ids: Data, idOrdered: Bool, in db: Database
    ) throws -> Tributary_V1_Column {
        // Row keys back to ids: the join table's rows with their source's and destination's ids.
        let join = """
            \(SQLText.quote(SQLText.joinTable(entity.name, relationship.name))) AS "tributary_j"
            JOIN \(SQLText.quote(entity.name)) AS "tributary_s" ON "tributary_s".\(SQLText.rowKey) = "tributary_j".source
            JOIN \(SQLText.quote(relationship.destination)) AS "tributary_d"
                ON "tributary_d".\(SQLText.rowKey) = "tributary_j".destination
            """
        let select = "SELECT \"tributary_s\".\"id\", \"tributary_d\".\"id\" FROM \(join)"
        let order = "ORDER BY \"tributary_s\".\"id\", \"tributary_d\".\"id\""
        var targets: [Data: Data] = [:]
        var counts: [Data: UInt32] = [:]
        func collect(_ rows: RowCursor) throws {
            while let row = try rows.next() {
                let source: Data = row[0]
                counts[source, default: 0] += 1
                targets[source, default: Data()].append(row[1] as Data)
            }
        }
        if idOrdered {
            try collect(
                Row.fetchCursor(
                    db,
                    sql: "\(select) WHERE \"tributary_s\".\"id\" >= ? AND \"tributary_s\".\"id\" <= ? \(order)",
                    arguments: [ids.prefix(16), ids.suffix(16)]))
        } else {
            var sources: [DatabaseValue] = []
            var offset = ids.startIndex
            while offset < ids.endIndex {
                sources.append(ids[offset..<offset + 16].databaseValue)
                offset += 16
            }
            for start in stride(from: 0, to: sources.count, by: idsPerQuery) {
                let chunk = Array(sources[start..<min(start + idsPerQuery, sources.count)])
                try collect(
                    Row.fetchCursor(
                        db,
                        sql:
                            "\(select) WHERE \"tributary_s\".\"id\" IN (\(SQLText.placeholders(chunk.count))) \(order)",
                        arguments: StatementArguments(chunk)))
            }
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

extension Tributary_V1_EntityBatch {
    /// Appends the rows of `other`, a batch of the same entity with the same columns in the same order.
    mutating func append(_ other: Tributary_V1_EntityBatch) {
        guard !other.ids.isEmpty else { return }
        guard !ids.isEmpty else {
            let operation = self.operation
            self = other
            self.operation = operation
            return
        }
        let rows = ids.count / 16
        let otherRows = other.ids.count / 16
        ids.append(other.ids)
        versions += other.versions
        for index in columns.indices where index < other.columns.count {
            let added = other.columns[index]
            if !columns[index].nulls.isEmpty || !added.nulls.isEmpty {
                var nulls = NullBitmap(rows: rows + otherRows)
                for row in 0..<rows where NullBitmap.isNull(columns[index].nulls, row: row) { nulls.set(row) }
                for row in 0..<otherRows where NullBitmap.isNull(added.nulls, row: row) { nulls.set(rows + row) }
                columns[index].nulls = nulls.data
            }
            columns[index].ints += added.ints
            columns[index].doubles += added.doubles
            columns[index].strings += added.strings
            columns[index].blobs += added.blobs
            columns[index].fixed16.append(added.fixed16)
            columns[index].counts += added.counts
        }
    }
}

/// Builds one column of a batch from the rows SQLite returns.
struct ColumnBuilder {
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
        case .string:
            switch value.storage {
            case .blob(let bytes): column.strings.append(String(decoding: bytes, as: UTF8.self))
            case .string(let string): column.strings.append(string)
            default: column.strings.append("")
            }
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
