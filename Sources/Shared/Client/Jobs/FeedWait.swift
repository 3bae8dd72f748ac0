import Foundation
import TributaryCore
import ZeroMQ

/// The loop behind the waits that follow a ``JobProgressFeed``: it asks the coordinator (the wait's `check`) when
/// the wait starts, once the feed has shown it is live, whenever a `$jobs` message says that what the wait is for
/// may have happened, and on a timer.
///
/// The check at the start and the one once the feed is live cover an end committed before the subscription reached
/// the coordinator (published to nobody); the timer covers a dropped message. Until the feed shows it is live, the
/// timer runs as often as a plain poll, so that a wait given a feed that never answers (a wrong endpoint) is no
/// slower than one.
struct FeedWait {
    /// Why the coordinator is asked.
    enum Reason: CustomStringConvertible {
        /// The wait began.
        case start
        /// The feed's first message came: from now on, every end is published to this subscriber.
        case feedLive
        /// A `$jobs` message about what the wait is for.
        case message(JobProgress)
        /// The timer: no message said anything for a while.
        case timer

        var description: String {
            switch self {
            case .start: "at the start"
            case .feedLive: "once the feed was live"
            case .message(let progress): "after $jobs said job \(progress.id) is \(progress.state.rawValue)"
            case .timer: "on the periodic check"
            }
        }
    }

    /// The timer's period until the feed's first message: a plain poll's.
    static let silentFeedInterval: Duration = .milliseconds(100)

    let feed: JobProgressFeed
    /// The timer's period once the feed is live.
    let interval: Duration

    /// Calls `check` at the start, once the feed is live, after each `$jobs` message that `wakesOn` picks (given how
    /// long ago the last check was), and on the timer, until it returns a value.
    /// - Throws: what `check` throws; `CancellationError` when the task is cancelled.
    func run<T>(
        wakesOn wanted: (JobProgress, _ sinceLastCheck: Duration) -> Bool, check: (Reason) async throws -> T?
    ) async throws -> T {
        var iterator = feed.inbound.makeAsyncIterator()
        var live = false
        var feedOpen = true
        var reason: Reason? = .start
        var lastCheck = ContinuousClock.now
        var nextCheck = lastCheck
        while true {
            if let due = reason {
                if let result = try await check(due) { return result }
                reason = nil
                lastCheck = .now
                nextCheck = lastCheck + (live ? interval : Self.silentFeedInterval)
            }
            let batch: [SocketLoop.Inbound]?
            if feedOpen {
                batch = await next(&iterator, before: nextCheck)
            } else {
                try await Task.sleep(until: nextCheck, clock: .continuous)
                batch = []
            }
            try Task.checkCancellation()
            if batch == nil { feedOpen = false }  // closed: the timer alone goes on
            for event in JobProgressFeed.events(in: batch ?? []) {
                if !live {
                    live = true
                    if reason == nil { reason = .feedLive }
                }
                if case .progress(let progress) = event, wanted(progress, .now - lastCheck) {
                    reason = .message(progress)
                }
            }
            if reason == nil, ContinuousClock.now >= nextCheck { reason = .timer }
        }
    }

    /// The feed's next messages, or an empty batch once `deadline` has passed; nil when the feed is closed.
    private func next(_ iterator: inout InboundQueue.AsyncIterator, before deadline: ContinuousClock.Instant) async
        -> [SocketLoop.Inbound]?
    {
        let inbound = feed.inbound
        let timer = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            // A wake after the messages came makes the next wait return at once, empty: the loop waits again.
            if !Task.isCancelled { inbound.wake() }
        }
        defer { timer.cancel() }
        return await iterator.next()
    }
}
