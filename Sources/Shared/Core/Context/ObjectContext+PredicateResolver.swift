import Foundation
import TributaryProtocol

extension ManagedObject {
    /// The object as in-memory predicate evaluation reads it.
    var predicateSubject: PredicateSubject {
        PredicateSubject(id: objectID.uuid, values: values, toOne: toOne, toMany: toMany)
    }
}

/// The objects a predicate's key paths reach from a context's unsaved objects, as that context sees them: its own
/// registered objects with their unsaved changes, and the rest read from its parent, one fetch per entity and step
/// of a path (not one per object). Objects deleted in the context, or that no longer exist, are not found.
final class ContextPredicateResolver: PredicateResolver {
    private var found: [UUID: PredicateSubject] = [:]

    /// Loads what `paths` reach from `objects`.
    /// - Throws: the parent's error when it cannot answer a fetch.
    init(context: ObjectContext, paths: [[PredicateHop]], from objects: [ManagedObject]) throws {
        let start = objects.map(\.predicateSubject)
        for path in paths {
            var frontier = start
            for hop in path {
                var ids: [UUID] = []
                var seen = Set<UUID>()
                for subject in frontier {
                    if hop.isToMany {
                        guard subject.toMany.indices.contains(hop.index) else { continue }
                        for id in subject.toMany[hop.index] where seen.insert(id).inserted { ids.append(id) }
                    } else if subject.toOne.indices.contains(hop.index), let id = subject.toOne[hop.index],
                        seen.insert(id).inserted
                    {
                        ids.append(id)
                    }
                }
                try load(ids, entity: hop.destination, in: context)
                frontier = ids.compactMap { found[$0] }
                if frontier.isEmpty { break }
            }
        }
    }

    func subject(for id: UUID, entity: String) -> PredicateSubject? {
        found[id]
    }

    private func load(_ ids: [UUID], entity: String, in context: ObjectContext) throws {
        var faults: [ManagedObject] = []
        var unknown: [UUID] = []
        for id in ids where found[id] == nil {
            if let object = context.registered[id] {
                if object.isFault { faults.append(object) } else { found[id] = object.predicateSubject }
            } else if context.deletedObjects[id] == nil {
                unknown.append(id)
            }
        }
        if !faults.isEmpty {
            let stored = try context.loadStoredValues(of: faults)
            for object in faults where object.isInserted || stored.contains(object.objectID.uuid) {
                found[object.objectID.uuid] = object.predicateSubject
            }
        }
        guard !unknown.isEmpty, let parent = context.parent else { return }
        for start in stride(from: 0, to: unknown.count, by: FetchRequest.maximumExcludedIDs) {
            var request = Tributary_V1_FetchRequest()
            request.entity = entity
            request.resultType = .objects
            for id in unknown[start..<min(start + FetchRequest.maximumExcludedIDs, unknown.count)] {
                id.append(to: &request.onlyIds)
            }
            for object in try context.transientObjects(from: try parent.fetch(request).objects) {
                found[object.objectID.uuid] = object.predicateSubject
            }
        }
    }
}

extension ObjectContext {
    /// What in-memory evaluation reads through `paths` from `objects`: nothing to load without paths or objects.
    /// - Throws: the parent's error when it cannot answer a fetch.
    func predicateResolver(for paths: [[PredicateHop]], from objects: [ManagedObject]) throws
        -> any PredicateResolver
    {
        guard !paths.isEmpty, !objects.isEmpty else { return NoPredicateResolver() }
        return try ContextPredicateResolver(context: self, paths: paths, from: objects)
    }
}
