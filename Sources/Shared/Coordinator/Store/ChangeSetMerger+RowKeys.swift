import Foundation
import GRDB
import TributaryCore

/// Row keys: relationships hold their destinations' integer row keys (see ``Schema``), so each to-one value and
/// join row of a change set is turned from the 16-byte id it carries into the key of the object it names.
extension ChangeSetMerger {
    /// A relationship written before its destination was: a self reference or a cycle within one insert batch
    /// (an employee whose manager comes later in the batch). Set once the change set's inserts and updates are
    /// done; a destination still missing then is refused.
    struct PendingReference {
        let entity: Entity
        let source: UUID
        let relationship: Relationship
        let destination: UUID
    }

    /// The row key of object `id` of `entity`, from those this change set met or by a lookup; nil when the store
    /// has no such object (yet).
    func rowKey(of id: UUID, in entity: String, connection: OpaquePointer) throws -> Int64? {
        if let key = rowKeys[entity, id] { return key }
        let select: SQLiteStatement
        if let cached = rowKeyStatements[entity] {
            select = cached
        } else {
            select = try statement(
                connection, "SELECT \(SQLText.rowKey) FROM \(SQLText.quote(entity)) WHERE \"id\" = ?")
            rowKeyStatements[entity] = select
        }
        select.bind(1, uuid: id)
        defer { select.reset() }
        guard try select.step() else { return nil }
        let key = select.int64(column: 0)
        rowKeys[entity, id] = key
        return key
    }

    /// The row key of an object this change set has just written.
    /// - Throws: ``StoreError`` when there is none, which would be a bug in the merge.
    func writtenRowKey(of id: UUID, in entity: String, connection: OpaquePointer) throws -> Int64 {
        guard let key = try rowKey(of: id, in: entity, connection: connection) else {
            throw StoreError(.sqlite, "\(ObjectID(entity: entity, uuid: id)) has no row key after its write")
        }
        return key
    }

    /// Sets the references whose destinations were not stored when their rows were written, following the change
    /// set's remaps: a destination found by its uniqueness key later in the same batch is the object it merged into.
    /// - Throws: ``StoreError`` (`constraint`) naming the relationship and the missing object, as Core Data refuses
    ///   a save with a dangling reference.
    func setPendingReferences(result: MergeResult, connection: OpaquePointer) throws {
        let pending = pendingReferences
        pendingReferences = []
        for reference in pending {
            let entity = reference.entity
            let relationship = reference.relationship
            let destination = result.resolve(reference.destination)
            guard let key = try rowKey(of: destination, in: relationship.destination, connection: connection) else {
                throw StoreError(
                    .constraint,
                    "'\(entity.name).\(relationship.name)' of \(ObjectID(entity: entity.name, uuid: reference.source)) "
                        + "points to \(ObjectID(entity: relationship.destination, uuid: destination)), "
                        + "which does not exist")
            }
            if relationship.isToMany {
                let source = try writtenRowKey(of: reference.source, in: entity.name, connection: connection)
                let add = try joinStatements(entity.name, relationship.name, connection: connection).add
                add.bind(1, source)
                add.bind(2, key)
                try add.execute()
            } else {
                let set = try statement(
                    connection,
                    "UPDATE \(SQLText.quote(entity.name)) SET \(SQLText.quote(relationship.name)) = ? WHERE \"id\" = ?")
                set.bind(1, key)
                set.bind(2, uuid: reference.source)
                try set.execute()
            }
        }
    }
}

/// The row keys of the objects one change set met, by entity and id: a single table keyed by both, hashed by the
/// id alone. The import looks one up for every reference it binds (an author, each reviewer) and every row it
/// writes, so the hash is on the writer's hot path: ids are random and spread the table on their own, where a
/// table per entity would hash the entity's name first for every lookup.
struct RowKeyTable {
    /// An object by entity and id. Ids are random, so the id spreads the table; two entities' objects sharing an
    /// id (which ids make rare) are told apart by the comparison.
    private struct Name: Hashable {
        let entity: String
        let id: UUID

        func hash(into hasher: inout Hasher) {
            withUnsafeBytes(of: id.uuid) { bytes in
                hasher.combine(bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
                hasher.combine(bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
        }
    }

    private var keys: [Name: Int64] = [:]

    subscript(entity: String, id: UUID) -> Int64? {
        get { keys[Name(entity: entity, id: id)] }
        set { keys[Name(entity: entity, id: id)] = newValue }
    }

    /// Empties the table, keeping its room unless one large change set grew it.
    mutating func removeAll() {
        keys.removeAll(keepingCapacity: keys.count <= 65_536)
    }
}
