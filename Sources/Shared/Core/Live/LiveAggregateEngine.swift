import Foundation
import TributaryProtocol

/// An aggregate request kept current from the commits a context merges (a live ``AggregateRequest``): it holds each
/// matching object's group and the values it adds to its group's aggregates, and after each merged commit moves the
/// objects the commit changed between groups, judged from the commit's values and the objects the context holds. A
/// count or a sum moves by the change; a minimum or a maximum whose value left its group is recomputed from the
/// group's held values. The store is asked again only for what the context cannot judge (an object changed in a key
/// the request reads but not held here, an object a key path reaches but the context lacks, a related object changed
/// under the predicate's key paths), counted in ``refetches``.
///
/// It holds every matching object (at most ``maximumMembers``), registered in its context so that the feed keeps
/// their values current, as `NSFetchedResultsController` holds its fetched objects. Used on its context's queue only.
package final class LiveAggregateEngine: @unchecked Sendable {
    // @unchecked: every mutable property is touched only inside blocks on its context's queue, like the context's.

    /// What one matching object adds to the result: its group's key values and its value of each aggregate's key.
    private struct Member: Equatable {
        var key: [SQLValue]
        var inputs: [SQLValue]
    }

    /// One group: its members and its aggregates.
    private struct Group {
        var members: Set<UUID> = []
        var accumulators: [AggregateAccumulator]
    }

    package let request: AggregateRequest
    let compiled: CompiledAggregate
    /// The entities the key paths of the predicate, the group keys and the aggregates reach.
    package let related: Set<String>
    /// Every entity a key of the request reaches, through a relationship on the way or at its end (`author`
    /// reaches User): deleting one of their objects clears references the commit does not list.
    private let reachable: Set<String>
    /// The relationship key paths fetched with the objects, so that what the key paths reach is held.
    private let prefetch: [String]
    /// Whether the predicate reads related objects, so that one changing may move objects this engine does not
    /// hold into the result.
    private let predicateReadsRelated: Bool
    /// The entity's properties the request reads (a key path by its first relationship).
    private let keys: Set<String>
    private var members: [UUID: Member] = [:]
    private var groups: [[SQLValue]: Group] = [:]
    /// The rows of the result, as of ``seq``.
    package private(set) var rows: [AggregateRow] = []
    /// The last commit the rows reflect.
    package private(set) var seq: UInt64 = 0
    /// How many times it asked the store again since the first fetch.
    package private(set) var refetches = 0

    /// Most objects a live aggregate holds (a fetch answers with at most 100,000).
    package static let maximumMembers = 99_999

    /// Compiles `request` for `context`'s model and fetches the objects it groups. Call on the context's queue.
    /// - Throws: ``FetchPredicateError`` for a request the model cannot answer; ``ContextError`` when more than
    ///   ``maximumMembers`` objects match; the parent's error for the fetch.
    package init(request: AggregateRequest, context: ObjectContext) throws {
        self.request = request
        let compiled = try request.compile(in: context.model)
        self.compiled = compiled
        let keyPaths = compiled.groupKeys.map(\.path) + compiled.aggregates.compactMap(\.key?.path)
        let predicatePaths = compiled.predicate?.relationshipPaths ?? []
        let paths = keyPaths.map(\.relationshipSequence).filter { !$0.isEmpty } + predicatePaths
        prefetch = Array(Set(paths.map { $0.map(\.name).joined(separator: ".") })).sorted()
        related = Set(paths.flatMap { $0.map(\.destination) })
        predicateReadsRelated = !predicatePaths.isEmpty
        let allKeys = (request.predicate?.keys ?? []).union(request.groupBy).union(request.aggregates.compactMap(\.key))
        reachable = allKeys.reduce(into: Set<String>()) {
            $0.formUnion(context.model.entities(reachedBy: $1, from: compiled.entity))
        }
        keys = Set(allKeys.map { String($0.drop { $0 == "#" }.split(separator: ".").first ?? "") })
        try reload(in: context, counted: false)
    }

    /// Brings the rows up to `save`, which `context` has merged. Returns false when the commit is one the rows
    /// already reflect.
    /// - Throws: the parent's error for a fetch; ``/TributaryProtocol/ProtocolError`` `INVALID_REQUEST` for a sum
    ///   that no longer fits in 64 bits; ``ContextError`` when more than ``maximumMembers`` objects match.
    package func apply(_ save: DidSave, in context: ObjectContext) throws -> Bool {
        guard save.seq > seq else { return false }
        seq = save.seq
        let entity = compiled.entity
        // A deleted object a key reaches (`author`, `author.team`) leaves references to it that the store clears
        // without listing the referring objects in the commit; a changed related object may move objects this engine
        // does not hold into the predicate. Both need the store. (An inserted object is reached by nothing yet:
        // relationships have no inverses, so only a change of the referring object, judged below, can reach it.)
        if save.deleted.contains(where: { reachable.contains($0.entity) })
            || (predicateReadsRelated && save.updated.contains { related.contains($0.entity) })
        {
            try reload(in: context)
            return true
        }
        // A held object a key path reaches changed: every member's key paths are read again.
        let relatedChanged = save.updated.contains {
            related.contains($0.entity) && context.registered[$0.uuid] != nil
        }
        for id in save.deleted where id.entity == entity.name {
            if let member = members[id.uuid] { leave(id.uuid, member) }
        }
        let changedKeys = save.changedProperties(of: entity.name)
        // An inserted object is whole in the commit when one batch alone wrote it (not also merged into by a later
        // batch of the same commit).
        let batches = save.batchCounts(of: entity.name)
        let inserts = save.insertedObjects(of: entity, in: context).filter { batches[$0.key] == 1 }
        let inserted = Set(save.inserted.lazy.filter { $0.entity == entity.name }.map(\.uuid))
        var candidates: [PredicateSubject] = []
        var unknown: [UUID] = []
        var seen = Set<UUID>()
        let changed = (save.inserted + save.updated).filter { $0.entity == entity.name }.map(\.uuid)
        for id in changed + (relatedChanged ? Array(members.keys) : []) where seen.insert(id).inserted {
            if let object = context.registered[id], !object.isFault {
                candidates.append(object.predicateSubject)
            } else if let row = inserts[id] {
                candidates.append(row.predicateSubject)
            } else if !inserted.contains(id), members[id] == nil, let columns = changedKeys[id],
                columns.isDisjoint(with: keys)
            {
                // Neither held nor a member, and changed in nothing the request reads: it stays out.
                continue
            } else {
                unknown.append(id)
            }
        }
        try place(candidates, fetching: unknown, in: context)
        try checkSize()
        // Objects that joined from the commit's inserts are held from now on, as fetched ones are, so that the
        // feed keeps their values current.
        for (id, object) in inserts where members[id] != nil && context.registered[id] == nil {
            object.version = save.seq
            _ = context.register(fetched: object)
        }
        rows = try currentRows()
        return true
    }

    /// Fetches the matching objects again, at the store's latest commit, and regroups them.
    private func reload(in context: ObjectContext, counted: Bool = true) throws {
        let (ids, seq) = try fetch(predicate: request.predicate, limit: Self.maximumMembers + 1, in: context)
        if counted { refetches += 1 }
        guard ids.count <= Self.maximumMembers else { throw tooMany() }
        members = [:]
        groups = [:]
        try place(ids.compactMap { context.registered[$0]?.predicateSubject }, fetching: [], in: context)
        self.seq = max(self.seq, seq)
        rows = try currentRows()
    }

    /// Refuses to hold more than ``maximumMembers`` objects.
    private func checkSize() throws {
        guard members.count <= Self.maximumMembers else { throw tooMany() }
    }

    private func tooMany() -> ContextError {
        ContextError(
            .unsupported,
            "a live aggregate holds the objects it groups, at most \(Self.maximumMembers); more '\(request.entity)' "
                + "objects match: narrow the predicate, or fetch the aggregate (ObjectContext.aggregate)")
    }

    /// Moves each of `subjects` to the group its values give now (or out of the result), and does the same for the
    /// objects of `unknown` after fetching them. A subject whose key paths reach an object the context does not hold
    /// is fetched too, with what its paths reach.
    private func place(_ subjects: [PredicateSubject], fetching unknown: [UUID], in context: ObjectContext) throws {
        var missing = unknown
        for subject in subjects where !place(subject, resolver: HeldObjects(context: context), strict: true) {
            missing.append(subject.id)
        }
        guard !missing.isEmpty else { return }
        refetches += 1
        var found = Set<UUID>()
        for start in stride(from: 0, to: missing.count, by: FetchRequest.maximumExcludedIDs) {
            let chunk = Array(missing[start..<min(start + FetchRequest.maximumExcludedIDs, missing.count)])
            found.formUnion(try fetch(predicate: nil, only: chunk, limit: chunk.count, in: context).ids)
        }
        for id in missing {
            if found.contains(id), let object = context.registered[id], !object.isFault {
                // What its key paths reach was fetched with it: an object still not found does not exist.
                _ = place(object.predicateSubject, resolver: HeldObjects(context: context), strict: false)
            } else if let member = members[id] {
                leave(id, member)
            }
        }
    }

    /// Moves `subject` to the group its values give (or out of the result). With `strict`, returns false and leaves
    /// everything as it was when a key path reached an object `resolver` does not hold.
    private func place(_ subject: PredicateSubject, resolver: HeldObjects, strict: Bool) -> Bool {
        let matches = compiled.predicate?.evaluate(subject, resolver: resolver) ?? true
        let member =
            matches
            ? Member(
                key: compiled.groupKeys.map { $0.path.singleValue(of: subject, resolver: resolver) },
                inputs: compiled.aggregates.map {
                    $0.key?.path.singleValue(of: subject, resolver: resolver) ?? .integer(1)
                })
            : nil
        if strict && resolver.missed { return false }
        let old = members[subject.id]
        guard old != member else { return true }
        if let old { leave(subject.id, old) }
        if let member { join(subject.id, member) }
        return true
    }

    private func join(_ id: UUID, _ member: Member) {
        members[id] = member
        if groups[member.key] == nil {
            groups[member.key] = Group(accumulators: compiled.aggregates.map { AggregateAccumulator($0.function) })
        }
        groups[member.key]!.members.insert(id)
        for (index, input) in member.inputs.enumerated() { groups[member.key]!.accumulators[index].add(input) }
    }

    private func leave(_ id: UUID, _ member: Member) {
        members[id] = nil
        guard groups[member.key] != nil else { return }
        groups[member.key]!.members.remove(id)
        if groups[member.key]!.members.isEmpty {
            groups[member.key] = nil
            return
        }
        for (index, input) in member.inputs.enumerated() { groups[member.key]!.accumulators[index].remove(input) }
    }

    /// The result's rows: each group's keys and aggregates (a stale one recomputed from its members' values),
    /// filtered by having, ordered and paged as the store's query does.
    private func currentRows() throws -> [AggregateRow] {
        var rows: [[SQLValue]] = []
        rows.reserveCapacity(groups.count)
        for key in Array(groups.keys) {
            for index in compiled.aggregates.indices where groups[key]!.accumulators[index].isStale {
                let values = groups[key]!.members.lazy.compactMap { self.members[$0]?.inputs[index] }
                groups[key]!.accumulators[index].recompute(from: values)
            }
            rows.append(key + (try values(of: groups[key]!.accumulators)))
        }
        if compiled.groupKeys.isEmpty && groups.isEmpty {
            rows.append(try values(of: compiled.aggregates.map { AggregateAccumulator($0.function) }))
        }
        return compiled.page(rows)
    }

    /// The aggregates' values of one group.
    private func values(of accumulators: [AggregateAccumulator]) throws -> [SQLValue] {
        do {
            return try zip(accumulators, compiled.aggregates).map { try $0.value(type: $1.key?.type ?? .int) }
        } catch is AggregateError {
            throw ProtocolError(
                .invalidRequest, "a sum of '\(request.entity)' in a live aggregate overflows a 64-bit integer")
        }
    }

    /// Fetches objects of the entity that `predicate` selects (those of `ids` only, when given), and what the key
    /// paths reach, registering them in `context`. Returns the objects' ids and the commit the fetch read.
    private func fetch(predicate: FetchPredicate?, only ids: [UUID]? = nil, limit: Int, in context: ObjectContext)
        throws -> (ids: [UUID], seq: UInt64)
    {
        guard let parent = context.parent else {
            throw ContextError(.noParent, "context '\(context.name)' has no parent to fetch a live aggregate from")
        }
        var wire = FetchRequest(entity: request.entity, predicate: predicate, limit: limit, prefetching: prefetch)
            .wire(.objects)
        for id in ids ?? [] { id.append(to: &wire.onlyIds) }
        let reply = try parent.fetch(wire)
        for batch in [reply.objects] + reply.prefetched where !batch.ids.isEmpty {
            try context.merge(batch, registeringNew: true)
        }
        let fetched = (0..<reply.objects.ids.count / 16).map {
            UUID(bytes: reply.objects.ids, at: reply.objects.ids.startIndex + $0 * 16)
        }
        return (fetched, reply.seq)
    }
}
