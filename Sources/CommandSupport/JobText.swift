import Foundation
import TributaryProtocol

/// How the CLI prints jobs.
public enum JobText {
    /// One line: `12  dead     import  attempt 3/20  0/1000  batch …  last error`.
    public static func summary(_ job: Tributary_V1_JobInfo) -> String {
        let padded = job.state.padding(toLength: 7, withPad: " ", startingAt: 0)
        var line =
            "\(job.jobID)  \(padded)  \(job.kind)  attempt \(job.attempt)/\(job.maxAttempts)"
            + "  \(job.done)/\(job.total)  batch \(job.batch)"
        if job.state == "queued" && job.runAt > Date().timeIntervalSince1970 {
            line += "  retry at \(Date(timeIntervalSince1970: job.runAt).formatted(.iso8601))"
        }
        if let last = job.errors.last { line += "  \(last.message)" }
        return line
    }

    /// Several lines: the summary's fields, the arguments, then every failed attempt.
    public static func details(_ job: Tributary_V1_JobInfo) -> String {
        var lines = [
            "job       \(job.jobID)", "state     \(job.state)", "kind      \(job.kind)",
            "queue     \(job.queue.isEmpty ? "default" : job.queue)", "batch     \(job.batch)",
            "attempt   \(job.attempt) of \(job.maxAttempts)",
            "progress  \(job.done) / \(job.total)",
        ]
        if !job.workerID.isEmpty { lines.append("worker    \(job.workerID)") }
        if !job.waiting.isEmpty { lines.append("waiting   \(job.waiting)") }
        if !job.afterJobs.isEmpty || !job.afterBatches.isEmpty {
            let parents = job.afterJobs.map { "job \($0)" } + job.afterBatches.map { "batch \($0)" }
            lines.append("after     \(parents.joined(separator: ", "))  (on parent failure: \(job.onParentFailure))")
        }
        if !job.schedule.isEmpty {
            let tick = Date(timeIntervalSince1970: job.tick).formatted(.iso8601)
            lines.append("schedule  \(job.schedule), tick \(tick)")
        }
        if job.runAt > 0 { lines.append("run at    \(Date(timeIntervalSince1970: job.runAt).formatted(.iso8601))") }
        for (key, value) in job.arguments.sorted(by: { $0.key < $1.key }) {
            lines.append("argument  \(key) = \(value)")
        }
        for error in job.errors {
            let at = Date(timeIntervalSince1970: error.at).formatted(.iso8601)
            lines.append("error     attempt \(error.attempt) at \(at): \(error.message)")
        }
        return lines.joined(separator: "\n")
    }
}
