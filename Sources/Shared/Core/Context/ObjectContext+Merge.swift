import Foundation
import TributaryProtocol

/// Merging the root's saves into a context (Core Data's `mergeChanges(fromContextDidSave:)`).
extension ObjectContext {
    /// Merges a didSave into this context: objects it holds take the saved values, except for properties they
    /// changed themselves and have not saved (in-memory changes win, as with Core Data's default merge); objects
    /// the save inserted or first touched are registered when `registeringNew` (a view context that shows
    /// everything), and deleted objects are forgotten.
    /// - Throws: ``ContextError`` when the save names an entity or property the model lacks, or a column does not
    ///   fit its attribute; nothing of the offending batch is merged then.
    ///
    /// An object this context already holds at the save's version or a later one (its own save, answered before the
    /// feed brought it) keeps what it has: a commit is never applied twice, nor an older one over a newer.
    public func mergeChanges(from save: DidSave, registeringNew: Bool = true) throws {
        assertOnQueue()
        for batch in save.values { try merge(batch, registeringNew: registeringNew, olderThan: save.seq) }
        // The store's version of what the save wrote is its sequence number: later saves of these objects from
        // here do not conflict with it (as in Core Data, merging refreshes the objects' snapshots).
        for id in save.inserted + save.updated {
            if let object = registered[id.uuid] { object.version = max(object.version, save.seq) }
        }
        for id in save.deleted { forget(id.uuid) }
    }

    /// Merges column-wise objects (a didSave's values, a snapshot page, a fetch's rows or a save's resolved
    /// conflicts), taking their versions when the batch carries them. `overridingChanges` lets the batch's values
    /// replace unsaved changes too. With `olderThan` (a commit's sequence number), objects held at that version or a
    /// later one are left as they are; with `keepingNewer`, objects held at a later version than the batch's row.
    package func merge(
        _ batch: Tributary_V1_EntityBatch, registeringNew: Bool, overridingChanges: Bool = false,
        olderThan seq: UInt64? = nil, keepingNewer: Bool = false
    ) throws {
        let (entity, rows, columns) = try prepare(batch)
        let versions = batch.versions.count == rows ? batch.versions : []
        let isComplete = Set(columns.map(\.property)).count == entity.attributes.count + entity.relationships.count
        for row in 0..<rows {
            let id = UUID(bytes: batch.ids, at: batch.ids.startIndex + row * 16)
            let object: ManagedObject
            if let registered = registered[id] {
                if let seq, registered.version >= seq { continue }
                if keepingNewer, !versions.isEmpty, registered.version > versions[row] { continue }
                object = registered
            } else {
                guard registeringNew else { continue }
                object = ManagedObject(
                    id: ObjectID(entity: entity.name, uuid: id), entity: entity, isInserted: false, context: self)
                object.isFault = !isComplete
                registered[id] = object
            }
            for column in columns where overridingChanges || !object.changed[column.property] {
                column.apply(row: row, to: object)
            }
            if !versions.isEmpty { object.version = versions[row] }
            if isComplete { object.isFault = false }
            // Merged values are saved values: a later rollback returns to them.
            if object.committed != nil { object.committed = (object.values, object.toOne, object.toMany) }
            indexUniqueness(of: object)
        }
    }

    /// The objects of a batch of stored rows, not registered (a fetch's candidates). A batch without columns (ids
    /// only) gives faults.
    func transientObjects(from batch: Tributary_V1_EntityBatch) throws -> [ManagedObject] {
        guard !batch.ids.isEmpty else { return [] }
        let (entity, rows, columns) = try prepare(batch)
        let versions = batch.versions.count == rows ? batch.versions : []
        return (0..<rows).map { row in
            let id = UUID(bytes: batch.ids, at: batch.ids.startIndex + row * 16)
            let object = ManagedObject(
                id: ObjectID(entity: entity.name, uuid: id), entity: entity, isInserted: false, context: self)
            for column in columns { column.apply(row: row, to: object) }
            if !versions.isEmpty { object.version = versions[row] }
            object.isFault = columns.isEmpty
            return object
        }
    }

    /// Checks a batch against the model before anything of it is applied.
    private func prepare(_ batch: Tributary_V1_EntityBatch) throws -> (Entity, Int, [MergeColumn]) {
        let entity = try requireEntity(batch.entity)
        let rows = batch.ids.count / 16
        guard batch.ids.count == rows * 16 else {
            throw ContextError(.wrongType, "the ids of a '\(entity.name)' batch are not 16 bytes each")
        }
        return (entity, rows, try batch.columns.map { try MergeColumn($0, of: entity, rows: rows) })
    }

    /// Takes a child context's save as this context's own unsaved changes: its inserts, updates and deletes are
    /// pending here until this context saves (Core Data's nested contexts: the child's save goes no further).
    func absorb(_ changeSet: Tributary_V1_ChangeSet) throws {
        assertOnQueue()
        let prepared = try changeSet.batches.map { batch in (batch, try prepare(batch)) }
        for (batch, (entity, rows, columns)) in prepared {
            for row in 0..<rows {
                let id = UUID(bytes: batch.ids, at: batch.ids.startIndex + row * 16)
                let objectID = ObjectID(entity: entity.name, uuid: id)
                switch batch.operation {
                case .delete:
                    delete(try object(with: objectID))
                case .insert where registered[id] == nil:
                    let object = ManagedObject(id: objectID, entity: entity, isInserted: true, context: self)
                    registered[id] = object
                    insertedOrder.append(id)
                    for column in columns { column.apply(row: row, to: object, markingChanged: true) }
                    indexUniqueness(of: object)
                default:
                    let object = try object(with: objectID)
                    for column in columns { column.apply(row: row, to: object, markingChanged: true) }
                    indexUniqueness(of: object)
                }
            }
        }
    }

    /// Forgets an object without deleting it (it was deleted in the store).
    func forget(_ id: UUID) {
        guard let object = registered.removeValue(forKey: id) else { return }
        object.isDeleted = true
        if updatedSet.remove(id) != nil { updatedOrder.removeAll { $0 == id } }
        if let key = object.uniquenessKey, uniqueIndex[object.entity.name]?[key] == id {
            uniqueIndex[object.entity.name]?[key] = nil
        }
    }

    /// Lets find-or-create find a merged object by its uniqueness values.
    func indexUniqueness(of object: ManagedObject) {
        guard let key = object.uniquenessKey else { return }
        uniqueIndex[object.entity.name, default: [:]][key] = object.objectID.uuid
    }
}

/// One column of a merged batch: the store's ``ColumnReader`` (which checks it against its attribute or
/// relationship and the row count) and the property it sets.
private struct MergeColumn {
    let property: Int
    private let reader: ColumnReader

    init(_ column: Tributary_V1_Column, of entity: Entity, rows: Int) throws {
        do {
            reader = try ColumnReader(column, entity: entity, rows: rows)
        } catch let error as StoreError {
            throw ContextError(error.code == .unknownAttribute ? .unknownProperty : .wrongType, error.message)
        }
        switch reader.target {
        case .attribute(let attribute):
            property = entity.attributes.firstIndex { $0.name == attribute.name }!
        case .toOne(let relationship), .toMany(let relationship):
            property = entity.attributes.count + entity.relationships.firstIndex { $0.name == relationship.name }!
        }
    }

    private func id(_ bytes: Data, at index: Int) -> UUID {
        UUID(bytes: bytes, at: bytes.startIndex + index * 16)
    }

    /// Sets the row's value on `object`; `markingChanged` counts it as the object's unsaved change.
    func apply(row: Int, to object: ManagedObject, markingChanged: Bool = false) {
        if markingChanged { object.willChange() }
        defer { if markingChanged { object.markChanged(property) } }
        let isNull = reader.isNull(row)
        switch (reader.target, reader.values) {
        case (.attribute, _):
            object.values[property] = reader.value(row)
        case (.toOne, .fixed16(let bytes)):
            object.toOne[property - object.entity.attributes.count] = isNull ? nil : id(bytes, at: row)
        case (.toMany, .toMany(_, let ids, let offsets)):
            object.toMany[property - object.entity.attributes.count] =
                isNull ? [] : (offsets[row]..<offsets[row + 1]).map { id(ids, at: $0) }
        case (.toOne, _), (.toMany, _):
            break  // ColumnReader pairs each target with its kind of values
        }
    }
}
