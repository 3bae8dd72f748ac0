import Foundation
import TributaryProtocol

/// Core Data's `NSBatchUpdateRequest`: sets the same values on every object of an entity that matches a predicate,
/// in the root writer, without fetching the objects first. Run it with ``ObjectContext/execute(_:)-(BatchUpdate)``.
///
/// ```swift
/// let stale = try FetchPredicate(format: "merged == NO AND createdAt < %@", cutoff)
/// let result = try await context.execute(BatchUpdate(entity: "PullRequest", predicate: stale, set: ["title": .string("stale")]))
/// print(result.count)
/// ```
public struct BatchUpdate: Sendable {
    /// The entity whose objects change.
    public var entity: String
    /// Which objects; nil: every object of the entity.
    public var predicate: FetchPredicate?
    /// The values to set: attributes by name (nil clears an optional one), and to-one relationships as the
    /// destination's id (`.uuid`), or nil to clear them.
    public var values: [String: AttributeValue?]
    /// Most objects one commit changes (at most 50,000, and the coordinator's `--max-change-set-rows`).
    public var objectsPerCommit: Int

    /// An update of the objects of `entity` that match `predicate`.
    public init(
        entity: String, predicate: FetchPredicate? = nil, set values: [String: AttributeValue?],
        objectsPerCommit: Int = 50_000
    ) {
        self.entity = entity
        self.predicate = predicate
        self.values = values
        self.objectsPerCommit = objectsPerCommit
    }
}

/// Core Data's `NSBatchDeleteRequest`: deletes every object of an entity that matches a predicate, in the root
/// writer, applying the relationships' delete rules (nullify, cascade, deny). Run it with
/// ``ObjectContext/execute(_:)-(BatchDelete)``.
public struct BatchDelete: Sendable {
    /// The entity whose objects are deleted.
    public var entity: String
    /// Which objects; nil: every object of the entity.
    public var predicate: FetchPredicate?
    /// Most objects one commit deletes (at most 50,000, and the coordinator's `--max-change-set-rows`); cascades
    /// delete more in the same commit.
    public var objectsPerCommit: Int

    /// A delete of the objects of `entity` that match `predicate`.
    public init(entity: String, predicate: FetchPredicate? = nil, objectsPerCommit: Int = 50_000) {
        self.entity = entity
        self.predicate = predicate
        self.objectsPerCommit = objectsPerCommit
    }
}

/// What a batch update or delete changed.
public struct BatchChangeResult: Sendable {
    /// The objects it updated or deleted, in id order (objects a cascade deleted are in the commits' didSaves).
    public var ids: [ObjectID] = []
    /// The sequence numbers of its commits, in order: one per ``BatchUpdate/objectsPerCommit`` objects.
    public var commits: [UInt64] = []

    /// How many objects it updated or deleted.
    public var count: Int { ids.count }
}

extension ObjectContext {
    /// Runs a batch update in the root writer (through this context's parents), and brings the objects this context
    /// holds among those it changed to their new values and version.
    ///
    /// Each commit is atomic and changes up to ``BatchUpdate/objectsPerCommit`` objects, the first by id after the
    /// previous commit's; when one fails, the commits before it stay, and running the update again goes on with
    /// what its predicate still selects. Unsaved changes of this context are not sent, and win over the batch's
    /// values here until saved.
    /// - Throws: ``ContextError`` for an unknown entity or property, a value of the wrong type, or a parent that
    ///   cannot reach the root; what the parent's save throws (a refusal names why).
    @discardableResult
    public func execute(_ request: BatchUpdate) async throws -> BatchChangeResult {
        let entity = try requireEntity(request.entity)
        var change = Self.batchChange(of: entity, .update, request.predicate)
        guard !request.values.isEmpty else {
            throw ContextError(.unsupported, "a batch update of '\(entity.name)' sets no values")
        }
        change.values = try request.values.sorted { $0.key < $1.key }.map { name, value in
            try Self.batchColumn(name, value, of: entity)
        }
        return try await execute(change, objectsPerCommit: request.objectsPerCommit)
    }

    /// Runs a batch delete in the root writer (through this context's parents), and forgets the objects this
    /// context holds among those it deleted.
    ///
    /// Each commit is atomic and deletes up to ``BatchDelete/objectsPerCommit`` objects (and what their cascades
    /// reach); a `deny` rule that refuses refuses that commit whole. When one fails, the commits before it stay.
    /// - Throws: as ``execute(_:)-(BatchUpdate)``.
    @discardableResult
    public func execute(_ request: BatchDelete) async throws -> BatchChangeResult {
        let change = Self.batchChange(of: try requireEntity(request.entity), .delete, request.predicate)
        return try await execute(change, objectsPerCommit: request.objectsPerCommit)
    }

    /// The wire form of a batch change of `entity`'s objects that match `predicate`.
    private static func batchChange(
        of entity: Entity, _ operation: Tributary_V1_Operation, _ predicate: FetchPredicate?
    ) -> Tributary_V1_BatchChange {
        var change = Tributary_V1_BatchChange()
        change.entity = entity.name
        change.operation = operation
        if let predicate { change.predicate = predicate.wire }
        return change
    }

    private func execute(_ change: Tributary_V1_BatchChange, objectsPerCommit: Int) async throws
        -> BatchChangeResult
    {
        guard let parent else {
            throw ContextError(.noParent, "context '\(name)' has no parent to run a batch change in")
        }
        var change = change
        change.limit = UInt32(clamping: max(1, objectsPerCommit))
        var result = BatchChangeResult()
        while true {
            let receipt = try await parent.execute(change, id: UUID())
            result.ids += receipt.batchIDs.map { ObjectID(entity: change.entity, uuid: $0) }
            if receipt.seq != 0 { result.commits.append(receipt.seq) }
            let sent = change
            perform { self.settle(sent, receipt) }
            guard receipt.batchMore, let last = receipt.batchIDs.last else { return result }
            change.afterID = last.bytes
        }
    }

    /// Brings the objects this context holds among those a batch change's commit changed to what it made of them.
    private func settle(_ change: Tributary_V1_BatchChange, _ receipt: SaveReceipt) {
        assertOnQueue()
        let held = receipt.batchIDs.filter { registered[$0] != nil }
        guard !held.isEmpty, receipt.seq != 0 else { return }
        switch change.operation {
        case .delete:
            for id in held { forget(id) }
        default:
            var batch = Tributary_V1_EntityBatch()
            batch.entity = change.entity
            batch.operation = .update
            for id in held { id.append(to: &batch.ids) }
            batch.columns = change.values.map { $0.repeated(rows: held.count) }
            try? merge(batch, registeringNew: false, olderThan: receipt.seq)
            for id in held { registered[id].map { $0.version = max($0.version, receipt.seq) } }
        }
    }

    /// A batch update's value for `name`, as a column of one row, checked against the entity.
    private static func batchColumn(_ name: String, _ value: AttributeValue?, of entity: Entity) throws
        -> Tributary_V1_Column
    {
        if let attribute = entity.attribute(named: name) {
            if let value, value.type != attribute.type {
                throw ContextError(
                    .wrongType, "'\(entity.name).\(name)' is \(attribute.type.rawValue), not \(value.type.rawValue)")
            }
            if value == nil && !attribute.isOptional {
                throw ContextError(
                    .wrongType, "'\(entity.name).\(name)' is not optional: a batch update cannot clear it")
            }
            return ChangeSetColumns.attribute(attribute, rows: 1) { _ in value }
        }
        guard let relationship = entity.relationship(named: name) else {
            throw ContextError(.unknownProperty, "'\(entity.name)' has no attribute or relationship '\(name)'")
        }
        guard !relationship.isToMany else {
            throw ContextError(
                .wrongType,
                "a batch update sets attributes and to-one relationships; '\(entity.name).\(name)' is to-many")
        }
        switch value {
        case .uuid(let destination)?:
            return ChangeSetColumns.toOne(name, rows: 1) { _ in destination }
        case nil:
            return ChangeSetColumns.toOne(name, rows: 1) { _ in nil }
        case let other?:
            throw ContextError(
                .wrongType,
                "'\(entity.name).\(name)' is a to-one relationship: set it to the destination's id (.uuid), not \(other.type.rawValue)"
            )
        }
    }
}
