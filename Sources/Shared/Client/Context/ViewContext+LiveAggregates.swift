import CoreMetrics
import Foundation
import TributaryCore

extension ViewContext {
    /// The live result of an aggregate request: its groups, kept current from the feed (see
    /// ``LiveAggregateResults``). The objects it groups (and what its key paths reach) are registered in ``context``
    /// and merged as the feed changes them; at most 99,999 objects may match.
    ///
    /// ```swift
    /// let perAuthor = try await view.results(
    ///     for: AggregateRequest(entity: "PullRequest", groupBy: ["author.login"], aggregates: [.count(), .sum("additions")]))
    /// for try await snapshot in perAuthor {
    ///     for row in snapshot.rows { print(row["author.login"] ?? "nil", row["count"]!, row["sum_additions"]!) }
    /// }
    /// ```
    /// - Parameters:
    ///   - request: the groups to keep current: its entity, predicate, group keys, aggregates, having, sort, limit
    ///     and offset.
    ///   - metrics: where the refetch counter (``LiveAggregateResults/refetchesMetric``) is recorded: the process's
    ///     bootstrapped metrics backend unless given.
    /// - Throws: ``/TributaryCore/FetchPredicateError`` for a request the model cannot answer;
    ///   ``/TributaryCore/ContextError`` for one that reads an entity a view started with `.entities(...)` does not
    ///   follow, or that more than 99,999 objects match; the coordinator's refusal of the first fetch.
    public func results(
        for request: AggregateRequest, metrics: any MetricsFactory = MetricsSystem.factory
    ) async throws -> LiveAggregateResults {
        let results = LiveAggregateResults(request: request, metrics: metrics)
        let observers = observers
        let followed = followed
        // The first fetch and the observer in one block: no commit merged in between is missed.
        let token = try await context.perform { context -> Int in
            let engine = try LiveAggregateEngine(request: request, context: context)
            try Self.requireFollowed(
                engine.related.union([request.entity]), by: followed, for: "live aggregate", in: context)
            results.publish(engine.rows, seq: engine.seq, refetches: 0)
            return observers.add(
                merged: { save, context in
                    do {
                        guard try engine.apply(save, in: context) else { return }
                        results.publish(engine.rows, seq: engine.seq, refetches: engine.refetches)
                    } catch {
                        results.end(throwing: error)
                    }
                },
                ended: { error in results.end(throwing: error) })
        }
        results.whenEnded { observers.remove(token) }
        return results
    }
}
