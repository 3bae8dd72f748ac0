import Foundation

/// The job attempts workers ran, read from their `--job-log` files: for a test to check that no job ran on two
/// workers (or twice on one) at once.
struct JobLedger {
    /// One attempt as a worker ran it: from the line of its start to the line of its end, on the machine's
    /// monotonic clock.
    struct Run: Equatable {
        let job: UInt64
        let attempt: UInt32
        let pid: Int32
        let worker: String
        let start: Int64
        /// Nil when the log has no end for it.
        var end: Int64?
        var outcome: String?
    }

    private struct Line: Decodable {
        let event: String
        let job: UInt64
        let attempt: UInt32
        let worker: String
        let pid: Int32
        let monotonic_ns: Int64
        let outcome: String?
    }

    /// Every attempt the logs record.
    private(set) var runs: [Run] = []

    /// Reads the logs at `paths`.
    /// - Throws: when a file cannot be read or a line does not decode.
    init(paths: [String]) throws {
        for path in paths {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            var open: [String: Int] = [:]
            for line in text.split(separator: "\n") {
                let entry = try JSONDecoder().decode(Line.self, from: Data(line.utf8))
                let key = "\(entry.pid) \(entry.job) \(entry.attempt)"
                switch entry.event {
                case "start":
                    open[key] = runs.count
                    runs.append(
                        Run(
                            job: entry.job, attempt: entry.attempt, pid: entry.pid, worker: entry.worker,
                            start: entry.monotonic_ns))
                default:
                    guard let index = open.removeValue(forKey: key) else { continue }
                    runs[index].end = entry.monotonic_ns
                    runs[index].outcome = entry.outcome
                }
            }
        }
    }

    /// Runs the logs started and never ended.
    var unfinished: [Run] { runs.filter { $0.end == nil } }

    /// Pairs of runs of one job that overlapped in time: the second started before the first ended.
    var overlaps: [(Run, Run)] {
        var found: [(Run, Run)] = []
        for (_, runs) in Dictionary(grouping: runs, by: \.job) {
            // Each run against the run before it that ended last.
            var latest: Run?
            for run in runs.sorted(by: { $0.start < $1.start }) {
                if let latest, run.start < (latest.end ?? .max) { found.append((latest, run)) }
                if (run.end ?? .max) > (latest?.end ?? .min) { latest = run }
            }
        }
        return found
    }

    /// The jobs some run completed.
    var completedJobs: Set<UInt64> { Set(runs.filter { $0.outcome == "completed" }.map(\.job)) }
}
