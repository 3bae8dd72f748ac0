import Foundation
import GRDB
import SwiftProtobuf
import TributaryCore
import TributaryProtocol

/// A batch change (`SaveChanges.batch_change`, Core Data's batch update and delete requests) turned into the change
/// set it makes, inside the commit's transaction: the ids of the matching objects, read there, as one update batch
/// (the values repeated for each) or one delete batch. The merger then applies it as any change set, so versions,
/// delete rules, history and the didSave are the same as for a context's save.
enum BatchChangeExpansion {
    /// Most objects one commit of a batch change takes; more matches go on in later requests (`batch_more`).
    static let maximumObjects = 50_000

    /// How many objects one commit of `change` takes: what it asks for (all it may when 0), within
    /// ``maximumObjects`` and the change-set limits, its values counted once per object (a value repeated for every
    /// object must not make a commit, or its didSave, larger than a change set may be).
    static func objectsPerCommit(_ change: Tributary_V1_BatchChange, maximumRows: Int, maximumBytes: Int) -> Int {
        // Each object's id, and its share of the values.
        let bytesPerObject = 16 + change.values.reduce(0) { $0 + ((try? $1.serializedBytes() as Data)?.count ?? 0) }
        let most = max(1, min(maximumObjects, maximumRows, maximumBytes / bytesPerObject))
        return change.limit == 0 ? most : min(Int(change.limit), most)
    }

    /// What a batch change makes of the store as it is now.
    struct Expanded {
        /// The change set to merge: no batch when nothing matches.
        let changes: Tributary_V1_ChangeSet
        /// The selected objects' ids, 16 bytes each, in id order.
        let ids: Data
        /// More objects match after the last selected one.
        let more: Bool
    }

    /// Selects the objects `change` names and builds its change set.
    /// - Throws: ``StoreError``: `unknownEntity`, `invalidPredicate`, `unknownAttribute` or `wrongType` (a value
    ///   that is not one row, a to-many relationship), naming what is wrong.
    static func expand(_ change: Tributary_V1_BatchChange, model: Model, in db: Database) throws -> Expanded {
        guard let entity = model.entity(named: change.entity) else {
            let known = model.entities.map(\.name).joined(separator: ", ")
            throw StoreError(
                .unknownEntity, "batch change of unknown entity '\(change.entity)' (the model has \(known))")
        }
        var condition = "1"
        var arguments: [DatabaseValue] = []
        if change.hasPredicate {
            do {
                let compiled = try FetchPredicate(wire: change.predicate).compile(for: entity, in: model)
                condition = compiled.sql
                arguments = compiled.arguments.map(\.databaseValue)
            } catch let error as FetchPredicateError {
                throw StoreError(.invalidPredicate, "batch change of '\(entity.name)': \(error.message)")
            }
        }
        if !change.afterID.isEmpty {
            condition = "(\(condition)) AND \"id\" > ?"
            arguments.append(change.afterID.databaseValue)
        }
        let limit = change.limit == 0 ? maximumObjects : min(Int(change.limit), maximumObjects)
        // One more than the limit, to tell whether more match.
        let selected = try Data.fetchAll(
            db, sql: "SELECT \"id\" FROM \(SQLText.quote(entity.name)) WHERE \(condition) ORDER BY \"id\" LIMIT ?",
            arguments: StatementArguments(arguments + [(limit + 1).databaseValue]))
        let rows = min(selected.count, limit)
        var batch = Tributary_V1_EntityBatch()
        batch.entity = entity.name
        batch.ids = Data(capacity: rows * 16)
        for id in selected.prefix(rows) { batch.ids.append(id) }
        switch change.operation {
        case .update:
            batch.operation = .update
            batch.columns = try change.values.map { try repeated($0, rows: rows, of: entity) }
        case .delete:
            batch.operation = .delete
        case .insert, .unspecified, .UNRECOGNIZED:
            throw StoreError(.invalidRequest, "a batch change updates or deletes; its operation is \(change.operation)")
        }
        var changes = Tributary_V1_ChangeSet()
        // No versions: the rows were read in this transaction, so there is nothing to conflict with.
        changes.mergePolicy = .objectTrump
        if rows > 0 { changes.batches = [batch] }
        return Expanded(changes: changes, ids: batch.ids, more: selected.count > limit)
    }

    /// A batch update's value (a column of one row) repeated for `rows` rows.
    static func repeated(_ column: Tributary_V1_Column, rows: Int, of entity: Entity) throws -> Tributary_V1_Column {
        if let relationship = entity.relationship(named: column.name), relationship.isToMany {
            throw StoreError(
                .wrongType,
                "a batch update sets attributes and to-one relationships; '\(column.name)' of '\(entity.name)' is to-many"
            )
        }
        guard entity.attribute(named: column.name) != nil || entity.relationship(named: column.name) != nil else {
            throw StoreError(.unknownAttribute, "'\(entity.name)' has no attribute or relationship '\(column.name)'")
        }
        let values =
            column.ints.count + column.doubles.count + column.strings.count + column.blobs.count
            + column.fixed16.count / 16
        guard values == 1, column.fixed16.count % 16 == 0, column.counts.isEmpty else {
            throw StoreError(
                .wrongType, "the value of '\(column.name)' in a batch update must be one row, not \(values)")
        }
        return column.repeated(rows: rows)
    }
}
