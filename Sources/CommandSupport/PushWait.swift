import ArgumentParser
import Logging
import TributaryClient
import TributaryCore
import TributaryMessaging

/// The `--wait` of the push commands: follows the jobs' ends on the feed's `$jobs` topic, subscribed before the push
/// (so an end committed right after it is not missed), prints how they ended, and exits 1 when a job died.
///
/// The feed makes a wait end within milliseconds of the commit that ends it, where a poll would add up to its period.
/// A feed that does not answer (`--feed` not the coordinator's) leaves the wait checking every 100 ms, as a poll
/// would; a live one is checked every 5 s besides, so that a dropped message cannot hang it.
public struct PushWait: Sendable {
    private let feed: JobProgressFeed
    private let logger: Logger

    /// Subscribes to `$jobs` on the feed at `endpoint`; call before pushing.
    /// - Throws: `ZMQError` when the endpoint is malformed.
    public init(feed endpoint: String, curve: CurveClientKeys?, logger: Logger) throws {
        feed = try JobProgressFeed(feed: endpoint, curve: curve)
        self.logger = logger
    }

    /// Waits for job `id`: prints `job ID done` or `job ID was cancelled`; names why it died and exits 1 when it
    /// did.
    public func job(_ id: Int64, client: JobClient) async throws {
        let job = try await client.waitForJob(id, following: feed, logger: logger)
        await feed.close()
        switch job.state {
        case .dead:
            let reason = job.errors.last?.message ?? "no error recorded"
            Terminal.error("job \(id) failed (dead after \(job.attemptsCounted) attempt(s)): \(reason)")
            throw ExitCode(1)
        case .cancelled: Terminal.line("job \(id) was cancelled")
        default: Terminal.line("job \(id) done")
        }
    }

    /// What a batch's progress bar counts.
    public enum Unit: Sendable {
        /// The rows its import jobs committed (`push import`).
        case rows
        /// Its jobs that finished (`push jobs`).
        case jobs
    }

    /// Waits for every job of `batch`, showing progress on a terminal: prints `done: N jobs[, R rows]`; names each
    /// dead job (the first 50) and exits 1 when any died.
    public func batch(_ batch: String, client: JobClient, unit: Unit) async throws {
        func bar(_ status: BatchStatus) -> String {
            switch unit {
            case .rows: Terminal.progressBar(done: status.doneRows, total: status.totalRows, unit: "rows")
            case .jobs:
                Terminal.progressBar(
                    done: status.doneJobs + status.deadJobs + status.cancelledJobs, total: status.totalJobs,
                    unit: "jobs")
            }
        }
        let final = try await client.waitForBatch(batch, following: feed, logger: logger) { status in
            Terminal.progress(bar(status))
        }
        await feed.close()
        Terminal.endProgress(bar(final))
        if final.deadJobs > 0 {
            for job in final.dead {
                let attempts = job.attempts == 1 ? "1 attempt" : "\(job.attempts) attempts"
                Terminal.error("job \(job.id) failed (dead after \(attempts)): \(job.message)")
            }
            throw ExitCode(1)
        }
        let cancelled = final.cancelledJobs == 0 ? "" : " (\(final.cancelledJobs) jobs cancelled)"
        let rows = unit == .rows ? ", \(final.doneRows) rows" : ""
        Terminal.line("done: \(final.doneJobs) jobs\(rows)\(cancelled)")
    }

    /// Closes the subscription (a push that failed, or did not wait after all).
    public func close() async {
        await feed.close()
    }
}
