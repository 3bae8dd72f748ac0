import Foundation

/// Merging the root's saves into a context (Core Data's `mergeChanges(fromContextDidSave:)`).
extension ObjectContext {
    /// Merges a didSave into this context: objects it holds take the saved values, except for properties they
    /// changed themselves and have not saved (in-memory changes win, as with Core Data's default merge); objects
    /// the save inserted or first touched are registered when `registeringNew` (a view context that shows
    /// everything), and deleted objects are forgotten.
    /// - Throws: ``ContextError`` when the save names an entity or property the model lacks, or a column does not
    ///   fit its attribute; nothing of the offending batch is merged then.
    public func mergeChanges(from save: DidSave, registeringNew: Bool = true) throws {
        assertOnQueue()
        for batch in save.values { try merge(batch, registeringNew: registeringNew) }
        for id in save.deleted { forget(id.uuid) }
    }

    /// Merges column-wise objects (a didSave's values or a snapshot page).
    func merge(_ batch: Tributary_V1_EntityBatch, registeringNew: Bool) throws {
        let (entity, rows, columns) = try prepare(batch)
        for row in 0..<rows {
            let id = UUID(bytes: batch.ids, at: batch.ids.startIndex + row * 16)
            let object: ManagedObject
            if let registered = registered[id] {
                object = registered
            } else {
                guard registeringNew else { continue }
                object = ManagedObject(
                    id: ObjectID(entity: entity.name, uuid: id), entity: entity, isInserted: false, context: self)
                registered[id] = object
            }
            for column in columns where !object.changed[column.property] {
                column.apply(row: row, to: object)
            }
            // Merged values are saved values: a later rollback returns to them.
            if object.committed != nil { object.committed = (object.values, object.toOne, object.toMany) }
            indexUniqueness(of: object)
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
    private func forget(_ id: UUID) {
        guard let object = registered.removeValue(forKey: id) else { return }
        object.isDeleted = true
        if updatedSet.remove(id) != nil { updatedOrder.removeAll { $0 == id } }
        if let constraint = object.entity.primaryUniqueness {
            let key = constraint.map { try? object.value($0) }
            if uniqueIndex[object.entity.name]?[key] == id { uniqueIndex[object.entity.name]?[key] = nil }
        }
    }

    /// Lets find-or-create find a merged object by its uniqueness values.
    private func indexUniqueness(of object: ManagedObject) {
        guard let constraint = object.entity.primaryUniqueness else { return }
        let key = constraint.map { try? object.value($0) }
        guard !key.contains(where: { $0 == nil }) else { return }
        uniqueIndex[object.entity.name, default: [:]][key] = object.objectID.uuid
    }
}

/// One column of a merged batch, checked against its attribute or relationship.
private struct MergeColumn {
    let property: Int
    private let column: Tributary_V1_Column
    private let kind: Kind
    private let offsets: [Int]

    private enum Kind {
        case attribute(Int, AttributeType)
        case toOne(Int)
        case toMany(Int)
    }

    init(_ column: Tributary_V1_Column, of entity: Entity, rows: Int) throws {
        self.column = column
        if let index = entity.attributes.firstIndex(where: { $0.name == column.name }) {
            let type = entity.attributes[index].type
            property = index
            kind = .attribute(index, type)
            let count: Int =
                switch type {
                case .int, .bool: column.ints.count
                case .double, .date: column.doubles.count
                case .string: column.strings.count
                case .data: column.blobs.count
                case .uuid: column.fixed16.count / 16
                }
            offsets = []
            try Self.require(count == rows, column, entity)
        } else if let index = entity.relationships.firstIndex(where: { $0.name == column.name }) {
            property = entity.attributes.count + index
            if entity.relationships[index].isToMany {
                kind = .toMany(index)
                var offsets = [0]
                for count in column.counts { offsets.append(offsets[offsets.count - 1] + Int(count)) }
                self.offsets = offsets
                try Self.require(
                    column.counts.count == rows && offsets.last! * 16 == column.fixed16.count, column, entity)
            } else {
                kind = .toOne(index)
                offsets = []
                try Self.require(column.fixed16.count == rows * 16, column, entity)
            }
        } else {
            throw ContextError(.unknownProperty, "entity '\(entity.name)' has no property '\(column.name)'")
        }
    }

    private static func require(_ condition: Bool, _ column: Tributary_V1_Column, _ entity: Entity) throws {
        guard condition else {
            throw ContextError(
                .wrongType, "column '\(entity.name).\(column.name)' does not hold one value of its type per row")
        }
    }

    private func isNull(_ row: Int) -> Bool {
        let byte = row >> 3
        return byte < column.nulls.count
            && column.nulls[column.nulls.startIndex + byte] & (1 << UInt8(row & 7)) != 0
    }

    private func id(at index: Int) -> UUID {
        UUID(bytes: column.fixed16, at: column.fixed16.startIndex + index * 16)
    }

    /// Sets the row's value on `object`; `markingChanged` counts it as the object's unsaved change.
    func apply(row: Int, to object: ManagedObject, markingChanged: Bool = false) {
        if markingChanged { object.willChange() }
        defer { if markingChanged { object.markChanged(property) } }
        switch kind {
        case .attribute(let index, let type):
            guard !isNull(row) else {
                object.values[index] = nil
                return
            }
            object.values[index] =
                switch type {
                case .int: .int(column.ints[row])
                case .bool: .bool(column.ints[row] != 0)
                case .double: .double(column.doubles[row])
                case .date: .date(Date(timeIntervalSince1970: column.doubles[row]))
                case .string: .string(column.strings[row])
                case .data: .data(column.blobs[row])
                case .uuid: .uuid(id(at: row))
                }
        case .toOne(let index):
            object.toOne[index] = isNull(row) ? nil : id(at: row)
        case .toMany(let index):
            object.toMany[index] = isNull(row) ? [] : (offsets[row]..<offsets[row + 1]).map(id(at:))
        }
    }
}
