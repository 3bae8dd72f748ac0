import Foundation
import GRDB
import TributaryCore

/// Optimistic locking: finding the rows of a change set whose objects changed in the store since their context
/// read them, and resolving them by the change set's merge policy.
extension ChangeSetMerger {
    /// What became of an update row in conflict.
    enum Resolution {
        /// Nothing was written for it: the store's object stays as it is.
        case skipped
        /// It was written; `partially` when only some of its values were (store trump).
        case written(partially: Bool)
    }

    /// The update and delete rows whose read version is not the stored one: by batch position, row → the stored
    /// version (0 when the object is gone). Rows without a read version are not checked.
    func findConflicts(_ batches: [(position: Int, reader: EntityBatchReader)], connection: OpaquePointer) throws
        -> [Int: [Int: UInt64]]
    {
        var found: [Int: [Int: UInt64]] = [:]
        for (position, batch) in batches where batch.operation != .insert && !batch.versions.isEmpty {
            let select = try statement(
                connection, "SELECT \"_version\" FROM \(SQLText.quote(batch.entity.name)) WHERE \"id\" = ?")
            for row in 0..<batch.rows {
                let read = batch.version(row)
                guard read != 0 else { continue }
                select.bind(1, uuid: batch.id(row))
                let stored = try select.step() ? UInt64(clamping: select.int64(column: 0)) : 0
                select.reset()
                if stored != read { found[position, default: [:]][row] = stored }
            }
        }
        return found
    }

    /// The conflicts found, described for the error policy: each object with the properties its row sets, the
    /// store's values and the change set's.
    func describeConflicts(_ batches: [(position: Int, reader: EntityBatchReader)], in db: Database) throws
        -> [MergeConflict]
    {
        var described: [MergeConflict] = []
        for (position, batch) in batches {
            guard let rows = conflicts[position] else { continue }
            for (row, storedVersion) in rows.sorted(by: { $0.key < $1.key }) {
                let id = batch.id(row)
                let stored = try storedValues(of: batch, id: id, in: db)
                var properties: [MergeConflict.Property] = []
                for (index, column) in batch.scalarColumns.enumerated() {
                    properties.append(.init(name: column.name, stored: stored?[index], yours: column.value(row)))
                }
                for column in batch.toManyColumns {
                    properties.append(.init(name: column.name, stored: nil, yours: nil))
                }
                described.append(
                    MergeConflict(
                        objectID: ObjectID(entity: batch.entity.name, uuid: id), readVersion: batch.version(row),
                        storedVersion: storedVersion, properties: properties))
            }
        }
        return described
    }

    /// Applies an update row in conflict as the merge policy says.
    func resolveUpdate(
        _ batch: EntityBatchReader, row: Int, id: UUID, stored: UInt64, connection: OpaquePointer
    ) throws -> Resolution {
        let objectID = ObjectID(entity: batch.entity.name, uuid: id)
        switch policy {
        case .error, .rollback:
            return .skipped
        case .objectTrump, .overwrite:
            guard stored != 0 else {
                throw StoreError(.constraint, "update of \(objectID), which was deleted in the store after it was read")
            }
            try write(batch, row: row, id: id, columns: batch.scalarColumns, connection: connection)
            return .written(partially: false)
        case .storeTrump:
            guard stored != 0 else { return .skipped }
            // Per property: the store's value stays where it differs from the one the context read.
            let current = try storedValues(of: batch, id: id, connection: connection)
            let winners = batch.scalarColumns.enumerated().filter { index, column in
                guard let original = batch.originals[column.name] else { return false }
                return current[index] == original.value(row)
            }.map(\.element)
            if winners.isEmpty && batch.toManyColumns.isEmpty { return .skipped }
            try write(batch, row: row, id: id, columns: winners, connection: connection)
            return .written(partially: winners.count < batch.scalarColumns.count)
        }
    }

    /// Writes some columns of an update row, and the new version.
    private func write(
        _ batch: EntityBatchReader, row: Int, id: UUID, columns: [ColumnReader], connection: OpaquePointer
    ) throws {
        let update = try statement(connection, Self.updateSQL(batch.entity, columns: columns.map(\.name)))
        let unresolved = try bindScalars(batch, row: row, into: update, from: 1, result: MergeResult(), only: columns)
        let index = Int32(columns.count + 1)
        update.bind(index, version)
        update.bind(index + 1, uuid: id)
        try update.execute()
        for (relationship, destination) in unresolved {
            pendingReferences.append(
                PendingReference(entity: batch.entity, source: id, relationship: relationship, destination: destination)
            )
        }
    }

    /// The stored values of the batch's scalar columns for object `id`, on the merge's connection.
    private func storedValues(of batch: EntityBatchReader, id: UUID, connection: OpaquePointer) throws
        -> [AttributeValue?]
    {
        guard !batch.scalarColumns.isEmpty else { return [] }
        let table = batch.entity.name
        let names = batch.scalarColumns.map { column in
            guard case .toOne(let relationship) = column.target else { return SQLText.quote(column.name) }
            return SQLText.toOneID(table: table, relationship: relationship.name, destination: relationship.destination)
        }.joined(separator: ", ")
        let select = try statement(
            connection, "SELECT \(names) FROM \(SQLText.quote(batch.entity.name)) WHERE \"id\" = ?")
        defer { select.reset() }
        select.bind(1, uuid: id)
        guard try select.step() else { return batch.scalarColumns.map { _ in nil } }
        return batch.scalarColumns.enumerated().map { index, column in
            AttributeValue(select.databaseValue(column: Int32(index)), type: column.storedType)
        }
    }

    private func storedValues(of batch: EntityBatchReader, id: UUID, in db: Database) throws -> [AttributeValue?]? {
        guard let connection = db.sqliteConnection else { return nil }
        return try storedValues(of: batch, id: id, connection: connection)
    }
}

extension ColumnReader {
    /// The type the store keeps this column's values as (a to-one relationship: a 16-byte id).
    var storedType: AttributeType {
        if case .attribute(let attribute) = target { return attribute.type }
        return .uuid
    }
}
