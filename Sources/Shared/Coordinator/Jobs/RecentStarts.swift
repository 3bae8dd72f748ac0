import Foundation
import GRDB
import Synchronization
import TributaryCore

/// When the latest jobs of each rate-limited kind or queue were leased: what a rate limit (`--rate-limit`, at most M
/// starts in any window of its period) is checked against at claim time. Kept on the writer's queue with the other
/// writer state; filled from the store's lease times the first time a key is limited, so a restart does not reset
/// a window. A claim rolled back after it counted its starts leaves them counted: a window then lets fewer start,
/// never more.
final class RecentStarts {
    /// When a rate limit a claim found full next has room: told to the router, which dispatches then.
    let nextRoom = NextRoom()

    /// Lease times, oldest first, by `kind:NAME` or `queue:NAME` (`…/ARGUMENT=VALUE` per argument value); at most
    /// the limit's count of them kept.
    private var times: [String: [Double]] = [:]

    /// How many more may start now under `rate` for `key` (a `column` value of the job table: `kind` or `queue`).
    func room(_ key: String, column: String, value: String, rate: RunLimits.Rate, now: Double, in db: Database) throws
        -> Int
    {
        try room(key, jobs: "\(column) = ?", [value], rate: rate, now: now, in: db)
    }

    /// How many more may start now under `rate` for `key`, the jobs whose leases count being those matching the SQL
    /// condition `jobs` with `arguments` (read from the store the first time).
    func room(
        _ key: String, jobs condition: String, _ arguments: StatementArguments, rate: RunLimits.Rate, now: Double,
        in db: Database
    ) throws -> Int {
        if times[key] == nil {
            times[key] = try Double.fetchAll(
                db,
                sql: """
                    SELECT leased_at FROM tributary_jobs WHERE \(condition) AND leased_at > ?
                    ORDER BY leased_at DESC LIMIT ?
                    """, arguments: arguments + [now - rate.seconds, rate.count]
            ).reversed()
        }
        // A start "later" than now (the clock stepped back) counts as now, so the window still ends.
        let recent = times[key, default: []].map { min($0, now) }.filter { $0 > now - rate.seconds }
        times[key] = recent
        let room = max(0, rate.count - recent.count)
        // Full: the oldest start leaves the window at its time plus the period, and a start is free again.
        if room == 0, let oldest = recent.first { nextRoom.note(oldest + rate.seconds) }
        return room
    }

    /// Counts a start for `key`.
    func started(_ key: String, at now: Double, keeping count: Int) {
        guard var recent = times[key] else { return }
        recent.append(now)
        if recent.count > count { recent.removeFirst(recent.count - count) }
        times[key] = recent
    }
}

/// The earliest time a full rate limit has room again, noted by claims on the writer and taken by the router, which
/// dispatches then instead of at its next tick (so a limit's pace is kept to, not up to half a second below it).
final class NextRoom: Sendable {
    private let earliest = Mutex<Double?>(nil)

    func note(_ time: Double) {
        earliest.withLock { $0 = min($0 ?? time, time) }
    }

    /// The earliest time noted since the last call, if any.
    func take() -> Double? {
        earliest.withLock { value in
            defer { value = nil }
            return value
        }
    }
}
