import TributaryProtocol

/// What to fetch (Core Data's `NSFetchRequest`): objects of one entity that match a predicate, in an order, a
/// window of them. Run it with ``ObjectContext/fetch(_:)->[ManagedObject]``, ``ObjectContext/fetchObjectIDs(_:)`` or
/// ``ObjectContext/count(for:)`` inside a `perform` block; the result includes the context's own unsaved changes
/// (Core Data's `includesPendingChanges`), and its parent's.
///
/// ```swift
/// let request = FetchRequest(
///     entity: "PullRequest", predicate: try FetchPredicate(format: "state == %@ AND additions > %d", "open", 100),
///     sortedBy: [FetchSort("additions", ascending: false)], limit: 20)
/// let top = try context.fetch(request)
/// ```
public struct FetchRequest: Sendable, Hashable {
    /// The entity fetched.
    public var entity: String
    /// Which objects; nil fetches every object of the entity.
    public var predicate: FetchPredicate?
    /// The order, by attributes or to-one relationships; objects equal on every key are ordered by id.
    public var sortDescriptors: [FetchSort]
    /// At most this many results; 0 for no limit (a fetch from the coordinator returns at most 100,000 objects).
    public var fetchLimit: Int
    /// Results to skip first.
    public var fetchOffset: Int
    /// Relationship key paths whose destinations come back with the objects, registered in the context (Core
    /// Data's `relationshipKeyPathsForPrefetching`): `["author", "reviewers"]` makes a loop over the fetched pull
    /// requests and their authors and reviewers one round trip, not one per object. `author.team` prefetches the
    /// authors and their teams.
    public var relationshipKeyPathsForPrefetching: [String]

    /// A request for the objects of `entity` that match `predicate` (every one when nil), sorted by
    /// `sortDescriptors`, `limit` of them (0: all) after skipping `offset`, with the destinations of
    /// `relationshipKeyPaths` prefetched.
    public init(
        entity: String, predicate: FetchPredicate? = nil, sortedBy sortDescriptors: [FetchSort] = [], limit: Int = 0,
        offset: Int = 0, prefetching relationshipKeyPaths: [String] = []
    ) {
        self.entity = entity
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = limit
        self.fetchOffset = offset
        self.relationshipKeyPathsForPrefetching = relationshipKeyPaths
    }

    /// The request on the wire, asking for `resultType`.
    package func wire(_ resultType: Tributary_V1_FetchResultType) -> Tributary_V1_FetchRequest {
        var wire = Tributary_V1_FetchRequest()
        wire.entity = entity
        if let predicate { wire.predicate = predicate.wire }
        wire.sort = sortDescriptors.map(\.wire)
        wire.limit = UInt32(clamping: max(0, fetchLimit))
        wire.offset = UInt32(clamping: max(0, fetchOffset))
        wire.resultType = resultType
        if resultType == .objects { wire.prefetch = relationshipKeyPathsForPrefetching }
        return wire
    }
}

extension FetchRequest {
    /// Most ids one fetch may name in `exclude_ids` or `only_ids` (the store binds each as a parameter); a context
    /// that excludes more sends several fetches.
    package static let maximumExcludedIDs = 10_000
}
