import TributaryProtocol

/// Aggregate fetches (Core Data's fetch with the dictionary result type): groups and their aggregates, computed by
/// the store.
extension ObjectContext {
    /// The rows `request` gives, computed by the store from what it holds: this context's unsaved changes (and its
    /// parents') are left out, as Core Data leaves pending changes out of dictionary results; save first to count
    /// them. Call it inside a `perform` block; in a worker or a view context it waits for the coordinator's answer
    /// (one round trip).
    /// - Throws: ``FetchPredicateError`` for a request the model cannot answer (an unknown key, `@sum` of a string,
    ///   a having predicate naming no aggregate…), before anything is sent; ``ContextError`` for an unknown entity;
    ///   the parent's error (a ``/TributaryProtocol/ProtocolError`` from the coordinator, a ``StoreError``).
    public func aggregate(_ request: AggregateRequest) throws -> AggregateResult {
        assertOnQueue()
        _ = try requireEntity(request.entity)
        _ = try request.compile(in: model)
        guard let parent else {
            throw ContextError(.noParent, "context '\(name)' has no parent to answer an aggregate request")
        }
        return try AggregateResult(wire: try parent.aggregate(request.wire), groupKeyCount: request.groupBy.count)
    }
}
