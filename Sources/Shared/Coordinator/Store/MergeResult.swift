import Foundation

/// What one change set did to the store: the ids per entity for the didSave event, and the inserted ids that
/// uniqueness merged into existing objects.
struct MergeResult {
    /// Ids touched in one entity, 16 bytes each, in the order they were applied.
    struct EntityChanges {
        var inserted = Data()
        var updated = Data()
        var deleted = Data()

        var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
    }

    /// Changes per entity, in the order entities were first touched.
    var entities: [(name: String, changes: EntityChanges)] = []
    /// Inserted ids replaced by existing objects' ids, per entity.
    var remaps: [String: (from: Data, to: Data)] = [:]
    /// The same remaps keyed by id, for re-pointing relationships later in the change set. Set as each row is
    /// merged; `remaps` gets an insert batch's at the batch's end, so the two agree between batches (the didSave
    /// remaps only the ids of entities `remaps` names).
    var remapped: [UUID: UUID] = [:]
    /// Rows of insert batches (by position in the change set) that found their existing object and set nothing
    /// else: they changed nothing, so the didSave values leave them out.
    var unchangedRows: [Int: [Int]] = [:]
    /// Objects in conflict that the merge policy resolved and that still exist, per entity: the save's answer
    /// carries their stored values, so the context takes them.
    var resolved: [String: [UUID]] = [:]
    /// Resolved objects written with only some of the change set's values (store trump): the didSave carries their
    /// stored rows instead of the change set's.
    var rewritten: Set<UUID> = []

    mutating func withChanges(of entity: String, _ body: (inout EntityChanges) -> Void) {
        if let index = entities.firstIndex(where: { $0.name == entity }) {
            body(&entities[index].changes)
        } else {
            var changes = EntityChanges()
            body(&changes)
            entities.append((entity, changes))
        }
    }

    /// Records inserted ids replaced by stored ones (already in ``remapped``), in the order made, for the answer and
    /// the didSave.
    mutating func appendRemaps(from: [UUID], to: [UUID], entity: String) {
        // In place, in one access: a copy of the pair out of the dictionary would make every append copy the
        // whole list.
        Self.append(from, to, to: &remaps[entity, default: (Data(), Data())])
    }

    private static func append(_ from: [UUID], _ to: [UUID], to pair: inout (from: Data, to: Data)) {
        from.append(to: &pair.from)
        to.append(to: &pair.to)
    }

    /// The id an incoming reference should point to, following any remap made earlier in this change set.
    @inline(__always)
    func resolve(_ id: UUID) -> UUID { remapped[id] ?? id }
}
