import CoreMetrics
import Foundation
import TributaryCore

/// A fetch request kept current across processes (Core Data's `NSFetchedResultsController`, SwiftData's `@Query`,
/// GRDB's `ValueObservation`): an `AsyncSequence` of ``/TributaryCore/LiveResultsSnapshot``s, the first the result
/// as fetched, then one after each commit that changed it, with the difference from the snapshot delivered before.
/// Made by ``ViewContext/results(for:sectionedBy:metrics:)``.
///
/// A consumer slower than the feed is not given a backlog: the next snapshot it takes is the latest state, its
/// difference and updated rows counted from the last snapshot it took. Iterate it from one task at a time.
///
/// Each refetch (a change the feed's values could not place) adds one to ``refetches`` and to the counter
/// ``refetchesMetric`` (dimension `entity`) of the metrics factory it was made with.
public final class LiveResults: AsyncSequence, Sendable {
    public typealias Element = LiveResultsSnapshot

    /// The counter of refetches, by `entity`, in the metrics backend the process bootstrapped (swift-metrics).
    public static let refetchesMetric = "tributary_live_results_refetches_total"

    /// What a snapshot shows.
    struct Shown: Equatable, Sendable {
        var ids: [ObjectID] = []
        var sections: [LiveResultsSection] = []
    }

    private let channel: LiveSnapshotChannel<Shown, ObjectID>

    init(entity: String, metrics: any MetricsFactory) {
        channel = LiveSnapshotChannel(empty: Shown(), metric: Self.refetchesMetric, entity: entity, metrics: metrics)
    }

    /// How many times the store was asked again since the first fetch (changes the feed's values could not place).
    public var refetches: Int { channel.refetches }

    /// Stops following: the sequence ends after the snapshot being taken, if any.
    public func cancel() { end(throwing: nil) }

    public func makeAsyncIterator() -> Iterator { Iterator(results: self) }

    /// Takes the snapshots of a ``LiveResults``.
    public struct Iterator: AsyncIteratorProtocol {
        let results: LiveResults

        /// The next state, or nil once the results are cancelled, their view closed, or the task cancelled.
        /// - Throws: what stopped the results (a refetch the coordinator refused, a feed that stopped).
        public mutating func next() async throws -> LiveResultsSnapshot? {
            try await results.next()
        }
    }

    /// Records a new state: the ids shown, their sections, the rows whose values changed, the commit, and the
    /// refetches so far (see ``LiveSnapshotChannel/publish(_:changed:seq:refetches:)``).
    func publish(
        _ ids: [ObjectID], sections: [LiveResultsSection], updated: [ObjectID], seq: UInt64, refetches: Int
    ) {
        channel.publish(Shown(ids: ids, sections: sections), changed: updated, seq: seq, refetches: refetches)
    }

    /// Ends the sequence, with `error` when something stopped it.
    func end(throwing error: (any Error)?) { channel.end(throwing: error) }

    /// Calls `body` once, when the sequence ends (to stop following the view).
    func whenEnded(_ body: @escaping @Sendable () -> Void) { channel.whenEnded(body) }

    private func next() async throws -> LiveResultsSnapshot? {
        guard let taken = try await channel.take() else { return nil }
        return LiveResultsSnapshot(
            ids: taken.shown.ids, previous: taken.previous.ids, updated: taken.changed, seq: taken.seq,
            refetched: taken.refetched, sections: taken.shown.sections, previousSections: taken.previous.sections)
    }
}
