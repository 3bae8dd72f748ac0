import Foundation
import TributaryCore

/// How the CLI prints jobs.
public enum JobText {
    /// One line: `12  dead     import  attempt 3/20  0/1000  batch …  last error`: the attempts counted of the
    /// job's maximum (with the attempt's own number, `#4`, when a hand-back or a retry set the two apart).
    public static func summary(_ job: JobInfo) -> String {
        let padded = job.state.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0)
        var line =
            "\(job.id)  \(padded)  \(job.kind)  attempt \(attempts(job))"
            + "  \(job.done)/\(job.total)  batch \(job.batch)"
        if job.state == .queued, let runAt = job.runAt, runAt > Date() {
            line += "  retry at \(runAt.formatted(.iso8601))"
        }
        if let last = job.errors.last { line += "  \(last.message)" }
        return line
    }

    /// Several lines: the summary's fields, the arguments, then every failed attempt.
    public static func details(_ job: JobInfo) -> String {
        var lines = [
            "job       \(job.id)", "state     \(job.state.rawValue)", "kind      \(job.kind)",
            "queue     \(job.queue)", "batch     \(job.batch)",
            "attempt   \(job.attemptsCounted) of \(job.maxAttempts)"
                + (job.attempt == job.attemptsCounted
                    ? ""
                    : " counted (\(job.attempt) run, \(job.attempt - job.attemptsCounted) not counted: handed back, or before a retry)"),
            "progress  \(job.done) / \(job.total)",
        ]
        if let worker = job.worker { lines.append("worker    \(worker)") }
        if let waiting = job.waiting, !waiting.isEmpty { lines.append("waiting   \(waiting)") }
        if job.hasParents {
            let parents = job.afterJobs.map { "job \($0)" } + job.afterBatches.map { "batch \($0)" }
            lines.append(
                "after     \(parents.joined(separator: ", "))  (on parent failure: \(job.onParentFailure.rawValue))")
        }
        if let schedule = job.schedule {
            let tick = Date(timeIntervalSince1970: job.tick ?? 0).formatted(.iso8601)
            lines.append("schedule  \(schedule), tick \(tick)")
        }
        if let runAt = job.runAt { lines.append("run at    \(runAt.formatted(.iso8601))") }
        for (key, value) in job.arguments.sorted(by: { $0.key < $1.key }) {
            lines.append("argument  \(key) = \(value)")
        }
        for error in job.errors {
            let at = Date(timeIntervalSince1970: error.at).formatted(.iso8601)
            lines.append("error     attempt \(error.attempt) at \(at): \(error.message)")
        }
        return lines.joined(separator: "\n")
    }

    /// `3/20`: the attempts counted of the maximum, with the attempt's number (`#4`) when they differ.
    public static func attempts(_ job: JobInfo) -> String {
        "\(job.attemptsCounted)/\(job.maxAttempts)" + (job.attempt == job.attemptsCounted ? "" : " #\(job.attempt)")
    }
}
