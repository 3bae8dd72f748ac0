import Foundation
import Synchronization
import TributaryCoordinator
import TributaryCore

/// Rows/s and jobs/s over the last ten minutes, one sample a second, from the coordinator's totals: the
/// dashboard's chart (a page opened mid-import sees the minutes before it). Sampled by ``HTTPService``.
final class RateHistory: Sendable {
    /// One second's rates.
    struct Sample: Encodable, Sendable {
        var time: Double
        var rowsPerSecond: Double
        var jobsPerSecond: Double
    }

    private struct State {
        var samples: [Sample] = []
        var last: (time: ContinuousClock.Instant, rows: Int, jobs: Int)?
    }

    static let capacity = 600
    private let state = Mutex(State())

    /// Takes a sample of `totals` now.
    func sample(_ totals: CoordinatorTotals, at now: ContinuousClock.Instant = .now) {
        let rows = totals.rowsCommitted
        let jobs = totals.jobsDone
        state.withLock { state in
            defer { state.last = (now, rows, jobs) }
            guard let last = state.last else { return }
            let seconds = last.time.duration(to: now).seconds
            guard seconds > 0 else { return }
            state.samples.append(
                Sample(
                    time: Date().timeIntervalSince1970, rowsPerSecond: Double(rows - last.rows) / seconds,
                    jobsPerSecond: Double(jobs - last.jobs) / seconds))
            if state.samples.count > Self.capacity { state.samples.removeFirst(state.samples.count - Self.capacity) }
        }
    }

    /// The samples kept, oldest first.
    var samples: [Sample] { state.withLock { $0.samples } }
}
