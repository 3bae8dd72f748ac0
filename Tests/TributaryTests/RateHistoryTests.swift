import Testing

@testable import TributaryHTTP

/// The dashboard's rates against the totals beside them, with the readings' instants given (no clock is waited on).
@Suite("RateHistory: the dashboard's rates agree with its totals")
struct RateHistoryTests {
    typealias Reading = RateHistory.Reading

    @Test("rows committed before the first sample are in it: the rates count from the totals' start")
    func commitsBeforeTheFirstSample() throws {
        let start = ContinuousClock.now
        let history = RateHistory(start: start)
        history.sample(Reading(instant: start + .seconds(1), rows: 5_000, jobs: 10), time: 1_000)
        let first = try #require(history.samples.first)
        #expect(first.time == 1_000)
        #expect(first.rowsPerSecond == 5_000)
        #expect(first.jobsPerSecond == 10)
    }

    @Test("the minute's rates are over the time since the start until a minute has passed, then over the last minute")
    func recentRatesCoverTheTimeSinceTheStart() {
        let start = ContinuousClock.now
        let history = RateHistory(start: start)
        #expect(history.recent(Reading(instant: start, rows: 0, jobs: 0)).seconds == 0)

        // An import done in the first half second: before any sample, the rates are over that half second.
        let early = history.recent(Reading(instant: start + .milliseconds(500), rows: 3_000, jobs: 6))
        #expect(early.seconds == 0.5)
        #expect(early.rowsPerSecond == 6_000)
        #expect(early.jobsPerSecond == 12)

        // Three samples later, over the three seconds since the start: the import is still in them.
        for second in 1...3 {
            history.sample(Reading(instant: start + .seconds(second), rows: 3_000, jobs: 6), time: Double(second))
        }
        let later = history.recent(Reading(instant: start + .seconds(3), rows: 3_000, jobs: 6))
        #expect(later.seconds == 3)
        #expect(later.rowsPerSecond == 1_000)
        #expect(later.jobsPerSecond == 2)

        // Past a minute, over the last one: 600 rows in it.
        for second in 4...90 {
            let rows = second > 30 ? 3_600 : 3_000
            history.sample(Reading(instant: start + .seconds(second), rows: rows, jobs: 6), time: Double(second))
        }
        let minute = history.recent(Reading(instant: start + .seconds(90), rows: 3_600, jobs: 6))
        #expect(minute.seconds == 60)
        #expect(minute.rowsPerSecond == 10)
        #expect(minute.jobsPerSecond == 0)
        #expect(history.samples.count == 90)
    }
}
