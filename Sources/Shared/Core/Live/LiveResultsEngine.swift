import Foundation
import TributaryProtocol

/// A fetch request kept current from the commits a context merges (the engine of `NSFetchedResultsController`,
/// across processes): it holds the first rows of the result in a ``LiveResultsWindow`` and, after each merged commit,
/// places the objects the commit changed from the values the commit carried and the context holds, without asking
/// the store. Where it cannot judge (an object changed in a key the request reads but not held here, a related
/// object changed under a key path, a window that ran short) it fetches the window again: one round trip, counted in
/// ``refetches``.
///
/// Used on its context's queue only.
package final class LiveResultsEngine: @unchecked Sendable {
    // @unchecked: every mutable property is touched only inside blocks on its context's queue, like the context's.
    package let request: FetchRequest
    let entity: Entity
    let predicate: CompiledPredicate?
    let sort: CompiledSort
    /// The request's key paths through relationships and its prefetch paths (`author`, `reviewers.team`).
    let prefetch: [String]
    /// The entities its key paths reach.
    package let related: Set<String>
    /// Every entity a key of the predicate or the sort reaches, through a relationship on the way or at its end
    /// (`author == nil` reaches User): deleting one of their objects clears references the commit does not list.
    let reachable: Set<String>
    /// The entity's properties the predicate or the sort reads (a key path by its first relationship).
    let keys: Set<String>
    /// The window, as of commit ``seq``.
    package private(set) var window: LiveResultsWindow
    /// The last commit the window reflects.
    package private(set) var seq: UInt64 = 0
    /// How many times it fetched the window again (the first fetch not counted).
    package private(set) var refetches = 0

    /// Most rows a live result without a limit holds (a fetch answers with at most 100,000).
    package static let maximumRows = 99_999

    /// Extra rows kept beyond those shown, so a row leaving rarely needs a fetch.
    static func spare(for limit: Int) -> Int { max(8, limit / 2) }

    /// Whether the rows are grouped into sections by the first sort key.
    let sectioned: Bool

    /// Compiles `request` for `context` and fetches its window. Call on the context's queue.
    /// - Parameter sectionKey: a key path to group the rows by (``LiveResultsSection``): the request's first sort key,
    ///   or, when that is another key, moved first from later in the sort (keeping its direction) or put first,
    ///   ascending.
    /// - Throws: ``FetchPredicateError`` or ``ContextError`` for a request the model cannot answer; the parent's
    ///   error for the fetch.
    package init(request: FetchRequest, sectionKey: String? = nil, context: ObjectContext) throws {
        var request = request
        if let sectionKey, request.sortDescriptors.first?.key != sectionKey {
            let later = request.sortDescriptors.firstIndex { $0.key == sectionKey }
            let first = later.map { request.sortDescriptors.remove(at: $0) } ?? FetchSort(sectionKey, ascending: true)
            request.sortDescriptors.insert(first, at: 0)
        }
        self.request = request
        sectioned = sectionKey != nil
        let entity = try context.requireEntity(request.entity)
        self.entity = entity
        predicate = try request.predicate?.compile(for: entity, in: context.model)
        sort = try request.sortDescriptors.compile(for: entity, in: context.model)
        let paths = (predicate?.relationshipPaths ?? []) + sort.relationshipPaths
        // The request's own prefetch paths are fetched with the window too, so what they reach is held when rows
        // are read; only the predicate's and the sort's paths decide whether a commit needs a fetch.
        let prefetched = try request.relationshipKeyPathsForPrefetching.map {
            try context.model.prefetchPath($0, from: entity)
        }
        prefetch = Array(Set((paths + prefetched).map { $0.map(\.name).joined(separator: ".") })).sorted()
        related = Set(paths.flatMap { $0.map(\.destination) })
        keys = Self.keys(of: request)
        let allKeys = (request.predicate?.keys ?? []).union(request.sortDescriptors.map(\.key))
        reachable = allKeys.reduce(into: Set<String>()) {
            $0.formUnion(context.model.entities(reachedBy: $1, from: entity))
        }
        window = LiveResultsWindow(fetched: [], needed: 0, capacity: 0, predicate: predicate, sort: sort)
        try refetch(in: context, counted: false)
    }

    /// The ids shown: the window after the request's offset, up to its limit.
    package var visible: [UUID] { Array(window.visible(offset: request.fetchOffset, limit: request.fetchLimit)) }

    /// The sections of the rows shown, in order (empty when the result is not sectioned), as of ``seq``.
    package private(set) var sections: [LiveResultsSection] = []

    /// Groups the rows shown into ``sections`` by the first sort key. Returns false when a key path reached an object
    /// the context does not hold (a row that came in from a commit, whose related object was never fetched).
    private func section(in context: ObjectContext) -> Bool {
        guard sectioned else { return true }
        let resolver = HeldObjects(context: context)
        var sections: [LiveResultsSection] = []
        var start = 0
        var current: AttributeValue?
        let shown = visible
        for (offset, id) in shown.enumerated() {
            let value = window.subject(id).flatMap { sort.firstKeyValue(of: $0, resolver: resolver) }
            if offset == 0 {
                current = value
            } else if value != current {
                sections.append(LiveResultsSection(value: current, range: start..<offset))
                start = offset
                current = value
            }
        }
        if !shown.isEmpty { sections.append(LiveResultsSection(value: current, range: start..<shown.count)) }
        self.sections = sections
        return !resolver.missed
    }

    /// Brings the window up to `save`, which `context` has merged. Returns the ids of shown rows whose values
    /// changed, or nil when the commit is one the window already reflects.
    package func apply(_ save: DidSave, in context: ObjectContext) throws -> Set<UUID>? {
        guard save.seq > seq else { return nil }
        let previous = seq
        seq = save.seq
        // A changed object a key path reaches may move rows; a deleted object any key reaches (`author == nil`)
        // leaves references the store clears without listing the referring rows. Both need the store.
        if (!related.isEmpty && touches(save, related))
            || save.deleted.contains(where: { reachable.contains($0.entity) })
        {
            return try refetchChanges(in: context, since: previous)
        }
        var changed: [PredicateSubject] = []
        var deleted: [UUID] = []
        let inserts = save.insertedObjects(of: entity, in: context)
        for id in save.deleted where id.entity == entity.name { deleted.append(id.uuid) }
        let changedKeys = save.changedProperties(of: entity.name)
        for id in save.inserted + save.updated where id.entity == entity.name {
            if let object = context.registered[id.uuid], !object.isFault {
                changed.append(object.predicateSubject)
            } else if let row = inserts[id.uuid] {
                changed.append(row.predicateSubject)
            } else if let columns = changedKeys[id.uuid], columns.isDisjoint(with: keys) {
                // Not held, so not in the window; changed in nothing the request reads, so it stays out.
                continue
            } else {
                // Changed in a key the request reads, and not known whole here.
                return try refetchChanges(in: context, since: previous)
            }
        }
        guard !changed.isEmpty || !deleted.isEmpty else { return [] }
        let resolver = HeldObjects(context: context)
        let outcome = window.apply(changed: changed, deleted: deleted, resolver: resolver)
        if resolver.missed || outcome == .needsRefetch {
            return try refetchChanges(in: context, since: previous)
        }
        guard case .applied(let updated) = outcome else { return [] }
        // Rows that came in from the commit's inserts are held from now on, as fetched rows are, so that their next
        // change is judged here too.
        for id in window.ids where context.registered[id] == nil {
            guard let object = inserts[id] else { continue }
            object.version = save.seq
            _ = context.register(fetched: object)
        }
        guard section(in: context) else {
            return try refetchChanges(in: context, since: previous)
        }
        return updated.intersection(visible)
    }

    /// Fetches the window again for a commit it could not judge, and returns the rows shown whose own values changed
    /// after commit `previous` (the state shown before): their version is later.
    private func refetchChanges(in context: ObjectContext, since previous: UInt64) throws -> Set<UUID> {
        try refetch(in: context)
        return Set(visible.filter { (context.registered[$0]?.version ?? 0) > previous })
    }

    /// Fetches the window again, at the store's latest commit; its objects (and what the key paths reach) are
    /// registered in `context`.
    package func refetch(in context: ObjectContext, counted: Bool = true) throws {
        guard let parent = context.parent else {
            throw ContextError(.noParent, "context '\(context.name)' has no parent to fetch a live result from")
        }
        let needed = request.fetchLimit == 0 ? Self.maximumRows : request.fetchOffset + request.fetchLimit
        let capacity =
            request.fetchLimit == 0 ? needed : min(needed + Self.spare(for: request.fetchLimit), Self.maximumRows)
        var wire = FetchRequest(
            entity: request.entity, predicate: request.predicate, sortedBy: request.sortDescriptors,
            limit: capacity + 1, prefetching: prefetch
        ).wire(.objects)
        wire.offset = 0
        let reply = try parent.fetch(wire)
        if counted { refetches += 1 }
        for batch in [reply.objects] + reply.prefetched where !batch.ids.isEmpty {
            try context.merge(batch, registeringNew: true)
        }
        let fetched = (0..<reply.objects.ids.count / 16).compactMap { row -> PredicateSubject? in
            let id = UUID(bytes: reply.objects.ids, at: reply.objects.ids.startIndex + row * 16)
            return context.registered[id]?.predicateSubject
        }
        window = LiveResultsWindow(
            fetched: fetched, needed: needed, capacity: capacity, predicate: predicate, sort: sort)
        seq = max(seq, reply.seq)
        // The fetch prefetched what the key paths reach, so nothing is missed here.
        _ = section(in: context)
    }

    /// Whether `save` changed an object of one of `entities`.
    private func touches(_ save: DidSave, _ entities: Set<String>) -> Bool {
        (save.inserted + save.updated + save.deleted).contains { entities.contains($0.entity) }
    }

    /// The properties of the fetched entity that `request` reads: its predicate's and sort's keys, a key path by
    /// its first step.
    private static func keys(of request: FetchRequest) -> Set<String> {
        func first(_ key: String) -> String {
            String(key.drop { $0 == "#" }.split(separator: ".").first ?? "")
        }
        func collect(_ predicate: FetchPredicate, into keys: inout Set<String>) {
            switch predicate {
            case .constant: break
            case .comparison(let comparison): keys.insert(first(comparison.key))
            case .and(let operands), .or(let operands): for operand in operands { collect(operand, into: &keys) }
            case .not(let operand): collect(operand, into: &keys)
            }
        }
        var keys = Set(request.sortDescriptors.map { first($0.key) })
        if let predicate = request.predicate { collect(predicate, into: &keys) }
        return keys
    }
}
