import CoreMetrics
import Foundation
import Synchronization
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

    private struct State {
        var ids: [ObjectID] = []
        var seq: UInt64 = 0
        var version = 0
        var updated: Set<ObjectID> = []
        var refetched = false
        var sections: [LiveResultsSection] = []
        var delivered: [ObjectID] = []
        var deliveredSections: [LiveResultsSection] = []
        var deliveredVersion = 0
        var ended = false
        var error: (any Error)?
        var waiter: CheckedContinuation<Void, Never>?
        var refetches = 0
    }

    private let state = Mutex(State())
    private let onEnd = Mutex<(@Sendable () -> Void)?>(nil)
    private let refetchCounter: Counter

    init(entity: String, metrics: any MetricsFactory) {
        refetchCounter = Counter(label: Self.refetchesMetric, dimensions: [("entity", entity)], factory: metrics)
    }

    /// How many times the store was asked again since the first fetch (changes the feed's values could not place).
    public var refetches: Int { state.withLock { $0.refetches } }

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
    /// refetches so far. A state equal to the last one (a commit that changed nothing shown) wakes nobody: the next
    /// snapshot carries its seq.
    func publish(
        _ ids: [ObjectID], sections: [LiveResultsSection], updated: [ObjectID], seq: UInt64, refetches: Int
    ) {
        let (waiter, refetched) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Int) in
            guard !state.ended else { return (nil, 0) }
            let refetched = Swift.max(0, refetches - state.refetches)
            state.refetches = refetches
            if state.version > 0, updated.isEmpty, ids == state.ids, sections == state.sections {
                state.seq = seq
                return (nil, refetched)
            }
            state.refetched = state.refetched || refetched > 0
            state.ids = ids
            state.sections = sections
            state.seq = seq
            state.updated.formUnion(updated)
            state.version += 1
            defer { state.waiter = nil }
            return (state.waiter, refetched)
        }
        if refetched > 0 { refetchCounter.increment(by: refetched) }
        waiter?.resume()
    }

    /// Ends the sequence, with `error` when something stopped it.
    func end(throwing error: (any Error)?) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.ended else { return nil }
            state.ended = true
            state.error = error
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
        onEnd.withLock { end in
            defer { end = nil }
            return end
        }?()
    }

    /// Calls `body` once, when the sequence ends (to stop following the view).
    func whenEnded(_ body: @escaping @Sendable () -> Void) {
        let ended = state.withLock { $0.ended }
        if ended { body() } else { onEnd.withLock { $0 = body } }
    }

    private func next() async throws -> LiveResultsSnapshot? {
        while true {
            enum Step {
                case snapshot(LiveResultsSnapshot)
                case finished((any Error)?)
                case wait
            }
            let step = state.withLock { state -> Step in
                if state.version > state.deliveredVersion {
                    let snapshot = LiveResultsSnapshot(
                        ids: state.ids, previous: state.delivered, updated: state.updated, seq: state.seq,
                        refetched: state.refetched, sections: state.sections,
                        previousSections: state.deliveredSections)
                    state.delivered = state.ids
                    state.deliveredSections = state.sections
                    state.deliveredVersion = state.version
                    state.updated = []
                    state.refetched = false
                    return .snapshot(snapshot)
                }
                if state.ended { return .finished(state.error) }
                return .wait
            }
            switch step {
            case .snapshot(let snapshot): return snapshot
            case .finished(let error):
                if let error { throw error }
                return nil
            case .wait:
                if Task.isCancelled { return nil }
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let ready = state.withLock { state -> Bool in
                            if state.version > state.deliveredVersion || state.ended || state.waiter != nil {
                                return true
                            }
                            state.waiter = continuation
                            return false
                        }
                        if ready { continuation.resume() }
                    }
                } onCancel: {
                    let waiter = state.withLock { state in
                        defer { state.waiter = nil }
                        return state.waiter
                    }
                    waiter?.resume()
                }
                if Task.isCancelled { return nil }
            }
        }
    }
}
