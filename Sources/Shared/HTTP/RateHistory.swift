import Foundation
import Synchronization
import TributaryCoordinator
import TributaryCore

/// Rows/s and jobs/s from the coordinator's totals, for the dashboard: one sample a second for the last ten minutes
/// (its chart: a page opened mid-import sees the minutes before it), and the rates over the last minute (its cards).
///
/// Both count from the totals' start, when every total was 0, so rows committed before the first sample are in the
/// first sample, and a snapshot taken before any sample has rates over the time since the start: the rates never
/// say nothing happened beside totals that say it did. Sampled by ``HTTPService``.
final class RateHistory: Sendable {
    /// One second's rates.
    struct Sample: Encodable, Sendable {
        var time: Double
        var rowsPerSecond: Double
        var jobsPerSecond: Double
    }

    /// The rates over the last minute, or over the time since the start while that is shorter.
    struct Recent: Encodable, Sendable {
        /// The time the rates are over.
        var seconds: Double
        var rowsPerSecond: Double
        var jobsPerSecond: Double
    }

    /// The totals at one instant.
    struct Reading: Sendable {
        var instant: ContinuousClock.Instant
        var rows: Int
        var jobs: Int
    }

    private struct State {
        var samples: [Sample] = []
        /// The start, then each sample's reading: the latest one at least ``RateHistory/window`` before the newest
        /// and those after it. Never empty.
        var readings: [Reading]
    }

    static let capacity = 600
    /// The time ``recent(_:)`` covers once the history is that old.
    static let window = Duration.seconds(60)
    private let state: Mutex<State>

    /// - Parameter start: when every total was 0 (``CoordinatorTotals/started``).
    init(start: ContinuousClock.Instant) {
        state = Mutex(State(readings: [Reading(instant: start, rows: 0, jobs: 0)]))
    }

    /// Takes a sample of `totals` now.
    func sample(_ totals: CoordinatorTotals) {
        sample(Self.reading(totals), time: Date().timeIntervalSince1970)
    }

    /// Adds the rates from the last reading (at first, the start) to `reading`, taken at `time` (Unix seconds).
    func sample(_ reading: Reading, time: Double) {
        state.withLock { state in
            let last = state.readings[state.readings.count - 1]
            let seconds = last.instant.duration(to: reading.instant).seconds
            guard seconds > 0 else { return }
            state.samples.append(
                Sample(
                    time: time, rowsPerSecond: Double(reading.rows - last.rows) / seconds,
                    jobsPerSecond: Double(reading.jobs - last.jobs) / seconds))
            if state.samples.count > Self.capacity { state.samples.removeFirst(state.samples.count - Self.capacity) }
            state.readings.append(reading)
            let cutoff = reading.instant - Self.window
            while state.readings.count > 1, state.readings[1].instant <= cutoff { state.readings.removeFirst() }
        }
    }

    /// The samples kept, oldest first.
    var samples: [Sample] { state.withLock { $0.samples } }

    /// The rates up to `now` (the totals read at the moment it names) from the latest reading at least a minute
    /// before it, or from the start while there is none; over 0 seconds, at 0, at the start itself.
    func recent(_ now: Reading) -> Recent {
        state.withLock { state in
            let cutoff = now.instant - Self.window
            let from = state.readings.last(where: { $0.instant <= cutoff }) ?? state.readings[0]
            let seconds = from.instant.duration(to: now.instant).seconds
            guard seconds > 0 else { return Recent(seconds: 0, rowsPerSecond: 0, jobsPerSecond: 0) }
            return Recent(
                seconds: seconds, rowsPerSecond: Double(now.rows - from.rows) / seconds,
                jobsPerSecond: Double(now.jobs - from.jobs) / seconds)
        }
    }

    /// The totals now.
    static func reading(_ totals: CoordinatorTotals) -> Reading {
        Reading(instant: .now, rows: totals.rowsCommitted, jobs: totals.jobsDone)
    }
}
