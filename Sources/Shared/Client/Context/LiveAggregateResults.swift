import CoreMetrics
import Foundation
import TributaryCore

/// An aggregate request kept current across processes: an `AsyncSequence` of
/// ``/TributaryCore/LiveAggregateSnapshot``s, the first the groups as fetched, then one after each commit that
/// changed them, with the difference from the snapshot delivered before. Made by
/// ``ViewContext/results(for:metrics:)-(AggregateRequest,_)``.
///
/// Each commit moves the objects it changed between groups, judged from its values: counts and sums move by the
/// change, a minimum or maximum whose value left is recomputed from the group's held values. A consumer slower than
/// the feed is given the latest state, not a backlog. Iterate it from one task at a time.
///
/// Each refetch (a change the feed's values could not place) adds one to ``refetches`` and to the counter
/// ``refetchesMetric`` (dimension `entity`) of the metrics factory it was made with.
public final class LiveAggregateResults: AsyncSequence, Sendable {
    public typealias Element = LiveAggregateSnapshot

    /// The counter of refetches, by `entity`, in the metrics backend the process bootstrapped (swift-metrics).
    public static let refetchesMetric = "tributary_live_aggregate_refetches_total"

    /// The names of each row's values.
    public let names: [String]
    private let channel: LiveSnapshotChannel<[AggregateRow], Never>

    init(request: AggregateRequest, metrics: any MetricsFactory) {
        names = request.columnNames
        channel = LiveSnapshotChannel(
            empty: [], metric: Self.refetchesMetric, entity: request.entity, metrics: metrics)
    }

    /// How many times the store was asked again since the first fetch.
    public var refetches: Int { channel.refetches }

    /// Stops following: the sequence ends after the snapshot being taken, if any.
    public func cancel() { channel.end(throwing: nil) }

    public func makeAsyncIterator() -> Iterator { Iterator(results: self) }

    /// Takes the snapshots of a ``LiveAggregateResults``.
    public struct Iterator: AsyncIteratorProtocol {
        let results: LiveAggregateResults

        /// The next state, or nil once the results are cancelled, their view closed, or the task cancelled.
        /// - Throws: what stopped the results (a fetch the coordinator refused, a feed that stopped, a sum that
        ///   overflowed).
        public mutating func next() async throws -> LiveAggregateSnapshot? {
            guard let taken = try await results.channel.take() else { return nil }
            return LiveAggregateSnapshot(
                names: results.names, rows: taken.shown, previous: taken.previous, seq: taken.seq,
                refetched: taken.refetched)
        }
    }

    /// Records the rows as of commit `seq`, and the refetches so far.
    func publish(_ rows: [AggregateRow], seq: UInt64, refetches: Int) {
        channel.publish(rows, changed: [], seq: seq, refetches: refetches)
    }

    /// Ends the sequence, with `error` when something stopped it.
    func end(throwing error: (any Error)?) { channel.end(throwing: error) }

    /// Calls `body` once, when the sequence ends (to stop following the view).
    func whenEnded(_ body: @escaping @Sendable () -> Void) { channel.whenEnded(body) }
}
