import Foundation
import GRDB
import TributaryCore

/// What the per-argument limits (`--limit kind:export/customer=2`, `--rate-limit kind:mail/customer=5/1s`) leave for
/// one claim on the writer: running jobs per argument value read once, start windows from ``RecentStarts``, and the
/// claim's own choices counted as it makes them.
struct ArgumentLimitRoom {
    private let limits: [RunLimits.PerArgument]
    /// Per limit (concurrency only): running jobs by argument value.
    private var running: [[String: Int]]
    /// Per limit (rates only): what is left to start, by argument value, read when first needed.
    private var rateRoom: [[String: Int]]

    var isEmpty: Bool { limits.isEmpty }

    /// The arguments the limits name, each once, in a fixed order.
    let arguments: [String]

    /// Columns to add to a candidates' SELECT: each of ``arguments``, as text (names are letters, digits, `_`, `-`
    /// and `.`, so they are safe inside the path literal).
    var columnsSQL: String {
        arguments.map { ", CAST(json_extract(arguments, '\(Self.path($0))') AS TEXT)" }.joined()
    }

    /// The SQL path of an argument in the job's `arguments` JSON.
    static func path(_ argument: String) -> String { "$.\"\(argument)\"" }

    /// The jobs a limit covers, as an SQL condition on `kind` or `queue` with its one argument.
    static func condition(_ target: RunLimits.Target) -> (String, String) {
        switch target {
        case .kind(let name): ("kind = ?", name)
        case .queue(let name): ("queue = ?", name)
        }
    }

    /// Reads the running jobs under each of `limits`.
    init(_ limits: [RunLimits.PerArgument], in db: Database) throws {
        self.limits = limits
        arguments = Array(Set(limits.map(\.argument))).sorted()
        running = Array(repeating: [:], count: limits.count)
        rateRoom = Array(repeating: [:], count: limits.count)
        for (index, limit) in limits.enumerated() where limit.rate == nil {
            let (condition, name) = Self.condition(limit.target)
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT coalesce(json_extract(arguments, ?), '') AS value, COUNT(*) AS n FROM tributary_jobs
                    WHERE state = \(JobState.running.sql) AND \(condition) GROUP BY value
                    """, arguments: [Self.path(limit.argument), name])
            {
                running[index][Self.text(row["value"])] = row["n"]
            }
        }
    }

    /// An argument's value as the limits key it (a number stored as one reads as its digits).
    private static func text(_ value: DatabaseValue) -> String {
        String.fromDatabaseValue(value) ?? Int64.fromDatabaseValue(value).map(String.init) ?? ""
    }

    /// Whether a job of `kind` in `queue` with `arguments` may start under every limit; if so it is counted.
    mutating func admit(
        kind: String, queue: String, arguments: [String: String], now: Double, starts: RecentStarts, in db: Database
    ) throws -> Bool {
        var applying: [(index: Int, value: String)] = []
        for (index, limit) in limits.enumerated() where limit.target.covers(kind: kind, queue: queue) {
            let value = arguments[limit.argument] ?? ""
            if let rate = limit.rate {
                if rateRoom[index][value] == nil {
                    let (condition, name) = Self.condition(limit.target)
                    rateRoom[index][value] = try starts.room(
                        Self.key(limit, value), jobs: "\(condition) AND coalesce(json_extract(arguments, ?), '') = ?",
                        [name, Self.path(limit.argument), value], rate: rate, now: now, in: db)
                }
                if rateRoom[index][value, default: 0] <= 0 { return false }
            } else if running[index][value, default: 0] >= limit.count {
                return false
            }
            applying.append((index, value))
        }
        for (index, value) in applying {
            if limits[index].rate != nil {
                rateRoom[index][value, default: 0] -= 1
            } else {
                running[index][value, default: 0] += 1
            }
        }
        return true
    }

    /// Records the starts of leased jobs under the rate limits that cover them.
    func started(_ jobs: [ClaimedJob], at now: Double, starts: RecentStarts) {
        for job in jobs {
            for limit in limits where limit.target.covers(kind: job.spec.kind, queue: job.spec.queue) {
                guard let rate = limit.rate else { continue }
                starts.started(
                    Self.key(limit, job.spec.arguments[limit.argument] ?? ""), at: now, keeping: rate.count)
            }
        }
    }

    private static func key(_ limit: RunLimits.PerArgument, _ value: String) -> String {
        "\(limit.name)=\(value)"
    }
}
