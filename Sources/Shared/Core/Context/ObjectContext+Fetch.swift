import Foundation
import TributaryProtocol

/// Fetching (Core Data's `fetch`, `count(for:)`, `refresh`): the parent answers for the objects this context has
/// not changed, and the context evaluates its own inserted and changed objects in memory, so a fetch sees the
/// context's unsaved changes — and, through a parent context, the parent's.
extension ObjectContext {
    /// The objects `request` selects, as this context's objects: ones it holds are returned as they are (an
    /// unchanged one takes the stored values), others are registered. Call it inside a `perform` block; in a
    /// worker it waits for the coordinator's answer (one round trip), as Core Data's fetch waits for its store.
    /// - Throws: ``FetchPredicateError`` for a predicate or sort the entity cannot answer; ``ContextError`` for an
    ///   unknown entity; the parent's error (a ``/TributaryProtocol/ProtocolError`` from the coordinator, a
    ///   ``StoreError``).
    ///
    /// Relationships named in ``FetchRequest/relationshipKeyPathsForPrefetching`` come back with the objects and
    /// are registered, so reading them afterwards asks the parent nothing more.
    ///
    /// Key paths in the predicate or sort are read as this context sees the related objects for the objects it
    /// inserted or changed; objects it has not changed are judged by the parent on the related objects as saved
    /// (as Core Data's store does): a pull request whose author's unsaved new login would match is found once the
    /// author is saved.
    public func fetch(_ request: FetchRequest) throws -> [ManagedObject] {
        assertOnQueue()
        let entity = try requireEntity(request.entity)
        let paths = try request.relationshipKeyPathsForPrefetching.map { try model.prefetchPath($0, from: entity) }
        let result = try resolveFetch(request.wire(.objects))
        let objects = result.objects.map(register(fetched:))
        if !paths.isEmpty { _ = try prefetch(paths, from: objects, prefetched: result.prefetched) }
        return objects
    }

    /// The ids of the objects `request` selects, in order, without registering objects (Core Data's
    /// `.managedObjectIDResultType`): hand them to another context's ``object(with:)``.
    public func fetchObjectIDs(_ request: FetchRequest) throws -> [ObjectID] {
        assertOnQueue()
        return try resolveFetch(request.wire(.ids)).objects.map(\.objectID)
    }

    /// How many objects `request` selects (its limit and offset apply).
    public func count(for request: FetchRequest) throws -> Int {
        assertOnQueue()
        return try resolveFetch(request.wire(.count)).count
    }

    /// Reloads an object's stored values from the parent (Core Data's `refresh(_:mergeChanges:)`). With
    /// `mergeChanges` false its unsaved changes are discarded; with true they stay on top of the stored values.
    /// Either way its version becomes the stored one, so its next save conflicts only with later saves. An object
    /// the store no longer has is forgotten when its changes are discarded. Inserted objects are left alone.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) throws {
        assertOnQueue()
        guard !object.isInserted, !object.isDeleted else { return }
        let id = object.objectID.uuid
        if !mergeChanges {
            if updatedSet.remove(id) != nil { updatedOrder.removeAll { $0 == id } }
            object.revertToCommitted()
        }
        object.isFault = true
        let found = try loadStoredValues(of: [object])
        if !found.contains(id) && !mergeChanges {
            registered[id] = nil
            object.isDeleted = true
        }
    }

    /// Refreshes every object the context holds that exists in the store, keeping unsaved changes.
    public func refreshAllObjects() throws {
        assertOnQueue()
        let objects = registered.values.filter { !$0.isInserted }
        for object in objects { object.isFault = true }
        _ = try loadStoredValues(of: Array(objects))
    }

    // MARK: - Internals

    /// Loads the stored values of `objects` from the parent: properties they have not changed take them, and the
    /// values their changes started from become the stored ones. Returns the ids the parent had.
    @discardableResult
    func loadStoredValues(of objects: [ManagedObject]) throws -> Set<UUID> {
        var found = Set<UUID>()
        defer { for object in objects { object.isFault = false } }
        guard let parent else { return found }
        let byEntity = Dictionary(grouping: objects, by: \.entity.name)
        for (entity, group) in byEntity {
            for start in stride(from: 0, to: group.count, by: FetchRequest.maximumExcludedIDs) {
                let chunk = group[start..<min(start + FetchRequest.maximumExcludedIDs, group.count)]
                var request = Tributary_V1_FetchRequest()
                request.entity = entity
                request.resultType = .objects
                for object in chunk { object.objectID.uuid.append(to: &request.onlyIds) }
                let rows = try transientObjects(from: try parent.fetch(request).objects)
                let byID = Dictionary(chunk.map { ($0.objectID.uuid, $0) }, uniquingKeysWith: { first, _ in first })
                for row in rows {
                    guard let object = byID[row.objectID.uuid] else { continue }
                    object.takeStoredValues(of: row)
                    found.insert(row.objectID.uuid)
                }
            }
        }
        return found
    }

    /// A fetch as this context sees it: the parent's answer for the objects the context has not changed or
    /// deleted, plus its inserted and changed objects that match in memory, sorted together, then windowed.
    /// Objects come back unregistered when the parent sent them (ids only, without values, for an ids fetch
    /// that needs no sorting here).
    func resolveFetch(_ request: Tributary_V1_FetchRequest) throws -> (
        objects: [ManagedObject], count: Int, prefetched: [Tributary_V1_EntityBatch]
    ) {
        let entity = try requireEntity(request.entity)
        let predicate =
            request.hasPredicate ? try FetchPredicate(wire: request.predicate).compile(for: entity, in: model) : nil
        let sort = try request.sort.map { FetchSort(wire: $0) }.compile(for: entity, in: model)
        let excludedByChild = Self.ids(request.excludeIds)
        let only = Self.ids(request.onlyIds)
        func concerns(_ object: ManagedObject) -> Bool {
            let id = object.objectID.uuid
            return object.entity.name == entity.name && !excludedByChild.contains(id)
                && (only.isEmpty || only.contains(id))
        }
        let changed = updatedOrder.compactMap { registered[$0] }.filter(concerns)
        // Changed stand-ins are judged on their whole values, so load what they did not change.
        let faults = changed.filter(\.isFault)
        if !faults.isEmpty { try loadStoredValues(of: faults) }
        var local = insertedOrder.compactMap { registered[$0] }.filter(concerns) + changed
        if let predicate {
            // Key paths read the objects they reach as this context sees them, loaded in a batch per step.
            let resolver = try predicateResolver(for: predicate.relationshipPaths, from: local)
            local = local.filter { predicate.evaluate($0.predicateSubject, resolver: resolver) }
        }
        var parentRequest = request
        for object in changed { object.objectID.uuid.append(to: &parentRequest.excludeIds) }
        for id in deletedOrder {
            if let object = deletedObjects[id], concerns(object) { id.append(to: &parentRequest.excludeIds) }
        }
        let limit = Int(request.limit)
        let offset = Int(request.offset)
        parentRequest.offset = 0
        parentRequest.limit = limit == 0 || request.resultType == .count ? 0 : UInt32(clamping: limit + offset)
        if request.resultType == .count {
            let stored = Int(clamping: try parent?.fetch(parentRequest).count ?? 0)
            let total = stored + local.count
            return ([], max(0, min(total - offset, limit == 0 ? Int.max : limit)), [])
        }
        // Sorting here needs the parent's values; an ids fetch that only merges by id does not.
        parentRequest.resultType =
            request.resultType == .ids && (local.isEmpty || request.sort.isEmpty) ? .ids : .objects
        let reply = try parent?.fetch(parentRequest)
        var candidates = try reply.map { try transientObjects(from: $0.objects) } ?? []
        if !local.isEmpty {
            candidates += local
            // Keys through relationships read the related objects as this context sees them.
            let resolver = try predicateResolver(for: sort.relationshipPaths, from: candidates)
            let subjects = Dictionary(
                candidates.map { ($0.objectID.uuid, $0.predicateSubject) }, uniquingKeysWith: { first, _ in first })
            candidates.sort { lhs, rhs in
                sort.areInIncreasingOrder(
                    subjects[lhs.objectID.uuid]!, subjects[rhs.objectID.uuid]!, resolver: resolver)
            }
        }
        let window = Array(candidates.dropFirst(offset).prefix(limit == 0 ? Int.max : limit))
        return (window, window.count, reply?.prefetched ?? [])
    }

    /// Registers what `paths` reach from `objects`: first the objects the parent prefetched, then, step by step,
    /// any destination still a fault (objects changed here, or a parent that sent none), loaded in one fetch per
    /// entity and step. Returns the objects each step reached, for a parent answering a child's prefetch.
    func prefetch(
        _ paths: [[PredicateHop]], from objects: [ManagedObject], prefetched: [Tributary_V1_EntityBatch]
    ) throws -> [(entity: String, objects: [ManagedObject])] {
        for batch in prefetched {
            for object in try transientObjects(from: batch) where deletedObjects[object.objectID.uuid] == nil {
                _ = register(fetched: object)
            }
        }
        var reached: [(entity: String, objects: [ManagedObject])] = []
        var steps = Set<String>()
        for path in paths {
            var frontier = objects
            var prefix = ""
            for hop in path {
                prefix += "." + hop.name
                var seen = Set<UUID>()
                var next: [ManagedObject] = []
                for object in frontier {
                    let ids: [UUID]
                    if hop.isToMany {
                        ids = object.toMany.indices.contains(hop.index) ? object.toMany[hop.index] : []
                    } else {
                        ids = object.toOne.indices.contains(hop.index) ? object.toOne[hop.index].map { [$0] } ?? [] : []
                    }
                    for id in ids where seen.insert(id).inserted && deletedObjects[id] == nil {
                        next.append(try self.object(with: ObjectID(entity: hop.destination, uuid: id)))
                    }
                }
                let faults = next.filter(\.isFault)
                if !faults.isEmpty {
                    // A destination the parent no longer has (deleted elsewhere, or an unsaved insert deleted
                    // here) is not an object: it leaves the context rather than stay as an empty one.
                    let found = try loadStoredValues(of: faults)
                    let missing = Set(faults.map(\.objectID.uuid)).subtracting(found)
                    if !missing.isEmpty {
                        for id in missing { registered[id] = nil }
                        next.removeAll { missing.contains($0.objectID.uuid) }
                    }
                }
                if steps.insert(prefix).inserted { reached.append((hop.destination, next)) }
                frontier = next
            }
        }
        return reached
    }

    /// The registered object for a fetched one: the one the context holds (an unchanged one takes the fetched
    /// values), or the fetched object, registered now.
    func register(fetched object: ManagedObject) -> ManagedObject {
        let id = object.objectID.uuid
        if let existing = registered[id] {
            if existing !== object { existing.takeStoredValues(of: object) }
            return existing
        }
        registered[id] = object
        indexUniqueness(of: object)
        return object
    }

    private static func ids(_ bytes: Data) -> Set<UUID> {
        var ids = Set<UUID>()
        var offset = bytes.startIndex
        while offset + 16 <= bytes.endIndex {
            ids.insert(UUID(bytes: bytes, at: offset))
            offset += 16
        }
        return ids
    }
}

extension ManagedObject {
    /// Takes the stored values of `stored` (the same object, as read from the parent) for every property this
    /// object has not changed, and records them as the values its changes started from; takes its version.
    func takeStoredValues(of stored: ManagedObject) {
        if committed != nil {
            committed = (stored.values, stored.toOne, stored.toMany)
        }
        for index in values.indices where !changed[index] { values[index] = stored.values[index] }
        let attributes = values.count
        for index in toOne.indices where !changed[attributes + index] {
            toOne[index] = stored.toOne[index]
            toMany[index] = stored.toMany[index]
        }
        version = stored.version
        isFault = false
    }
}
