import Foundation
import Synchronization
import TributaryCore

/// A fetch request kept current across processes (Core Data's `NSFetchedResultsController`, SwiftData's `@Query`,
/// GRDB's `ValueObservation`): an `AsyncSequence` of ``/TributaryCore/LiveResultsSnapshot``s, the first the result
/// as fetched, then one after each commit that changed it, with the difference from the snapshot delivered before.
/// Made by ``ViewContext/results(for:)``.
///
/// A consumer slower than the feed is not given a backlog: the next snapshot it takes is the latest state, its
/// difference and updated rows counted from the last snapshot it took. Iterate it from one task at a time.
public final class LiveResults: AsyncSequence, Sendable {
    public typealias Element = LiveResultsSnapshot

    private struct State {
        var ids: [ObjectID] = []
        var seq: UInt64 = 0
        var version = 0
        var updated: Set<ObjectID> = []
        var refetched = false
        var delivered: [ObjectID] = []
        var deliveredVersion = 0
        var ended = false
        var error: (any Error)?
        var waiter: CheckedContinuation<Void, Never>?
        var refetches = 0
    }

    private let state = Mutex(State())
    private let onEnd = Mutex<(@Sendable () -> Void)?>(nil)

    init() {}

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

    /// Records a new state: the ids shown, the rows whose values changed, the commit.
    func publish(_ ids: [ObjectID], updated: some Sequence<ObjectID>, seq: UInt64, refetches: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.ended else { return nil }
            state.refetched = state.refetched || refetches > state.refetches
            state.refetches = refetches
            state.ids = ids
            state.seq = seq
            state.updated.formUnion(updated)
            state.version += 1
            defer { state.waiter = nil }
            return state.waiter
        }
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
                        refetched: state.refetched)
                    state.delivered = state.ids
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
