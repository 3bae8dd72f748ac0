import Foundation
import TributaryCore
import TributaryProtocol

/// A validated entity batch from a change set: its entity, operation, row ids and typed columns.
struct EntityBatchReader {
    enum Operation {
        case insert, update, delete

        /// Inserts first, then updates, then deletes.
        var rank: Int {
            switch self {
            case .insert: 0
            case .update: 1
            case .delete: 2
            }
        }
    }

    let entity: Entity
    let operation: Operation
    let rows: Int
    let ids: Data
    /// Attribute and to-one columns, in wire order: the ones bound into the row's statement.
    let scalarColumns: [ColumnReader]
    /// To-many columns, written to join tables.
    let toManyColumns: [ColumnReader]
    /// Whether an insert carries columns beyond its uniqueness keys, so a merged duplicate counts as an update.
    let hasNonKeyColumns: Bool
    /// Updates and deletes: the version each row's object had when the context read it (0: not read). Empty when
    /// the batch carries none.
    let versions: [UInt64]
    /// Updates under the store-trump policy: the values the context read, by column name.
    let originals: [String: ColumnReader]

    init(_ batch: Tributary_V1_EntityBatch, model: Model) throws {
        guard let entity = model.entity(named: batch.entity) else {
            let known = model.entities.map(\.name).joined(separator: ", ")
            throw StoreError(.unknownEntity, "unknown entity '\(batch.entity)' (the model has \(known))")
        }
        self.entity = entity
        switch batch.operation {
        case .insert: operation = .insert
        case .update: operation = .update
        case .delete: operation = .delete
        case .unspecified, .UNRECOGNIZED:
            throw StoreError(.wrongType, "a batch of '\(entity.name)' has no valid operation")
        }
        guard batch.ids.count % 16 == 0 else {
            throw StoreError(.wrongType, "ids of a '\(entity.name)' batch are not a multiple of 16 bytes")
        }
        ids = batch.ids
        rows = batch.ids.count / 16
        var seen = Set<String>()
        var scalar: [ColumnReader] = []
        var toMany: [ColumnReader] = []
        for column in batch.columns {
            guard seen.insert(column.name).inserted else {
                throw StoreError(.wrongType, "column '\(entity.name).\(column.name)' appears twice in one batch")
            }
            let reader = try ColumnReader(column, entity: entity, rows: rows)
            if case .toMany = reader.target { toMany.append(reader) } else { scalar.append(reader) }
        }
        if operation == .delete && !batch.columns.isEmpty {
            throw StoreError(.wrongType, "a delete batch of '\(entity.name)' carries columns; deletes take ids only")
        }
        scalarColumns = scalar
        toManyColumns = toMany
        guard batch.versions.isEmpty || batch.versions.count == rows else {
            throw StoreError(
                .wrongType, "a '\(entity.name)' batch has \(batch.versions.count) versions for its \(rows) rows")
        }
        if operation == .insert && batch.versions.contains(where: { $0 != 0 }) {
            throw StoreError(.wrongType, "an insert batch of '\(entity.name)' carries versions; new objects have none")
        }
        versions = batch.versions
        var originals: [String: ColumnReader] = [:]
        for column in batch.originals {
            guard operation == .update, seen.contains(column.name), originals[column.name] == nil else {
                throw StoreError(
                    .wrongType,
                    "original column '\(entity.name).\(column.name)' does not match a column of its update batch")
            }
            originals[column.name] = try ColumnReader(column, entity: entity, rows: rows)
        }
        self.originals = originals
        let keys = Set(entity.uniqueness.flatMap { $0 })
        hasNonKeyColumns = batch.columns.contains { !keys.contains($0.name) }
    }

    @inline(__always)
    func id(_ row: Int) -> UUID { UUID(bytes: ids, at: ids.startIndex + row * 16) }

    /// The version row `row`'s object had when read, 0 when unknown.
    @inline(__always)
    func version(_ row: Int) -> UInt64 { versions.isEmpty ? 0 : versions[row] }
}
