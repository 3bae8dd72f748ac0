import Foundation
import Logging
import TributaryCore

/// Waiting for jobs to end by following the feed's `$jobs` topic: the wait learns of an end within milliseconds of
/// its commit, and asks the coordinator only when the feed says something happened (and every `interval`, in case a
/// message was dropped).
extension JobClient {
    /// Waits until job `id` is done, dead or cancelled, following `feed` (made before the job was pushed).
    /// - Parameters:
    ///   - id: the job.
    ///   - feed: the `$jobs` subscription, made before the job was pushed.
    ///   - interval: how often the job is checked when the feed says nothing (a dropped message); until the feed's
    ///     first message, every 100 ms.
    ///   - logger: told at debug level of each check and why it was made.
    /// - Returns: the job as it ended, with its errors.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` from the coordinator (`UNKNOWN_JOB` when it was deleted).
    public func waitForJob(
        _ id: Int64, following feed: JobProgressFeed, checkingEvery interval: Duration = .seconds(5),
        logger: Logger? = nil
    ) async throws -> JobInfo {
        try await FeedWait(feed: feed, interval: interval).run(
            wakesOn: { progress, _ in progress.id == id && progress.state.isFinished },
            check: { reason in
                let job = try await self.job(id)
                logger?.debug("checked job \(id) (\(job.state.rawValue)) \(reason)")
                return job.state.isFinished ? job : nil
            })
    }

    /// Waits until every job of `batch` is done, dead or cancelled, following `feed` (made before the jobs were
    /// pushed), reporting each status read to `progress`: when a job of the batch ends, and at most every 200 ms as
    /// their progress is published.
    /// - Parameters:
    ///   - batch: the batch.
    ///   - feed: the `$jobs` subscription, made before the jobs were pushed.
    ///   - interval: how often the batch is checked when the feed says nothing (a dropped message); until the
    ///     feed's first message, every 100 ms.
    ///   - logger: told at debug level of each check and why it was made.
    ///   - progress: given each status read.
    /// - Returns: the batch's last status.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` `UNKNOWN_JOB` when no job was pushed as `batch`.
    public func waitForBatch(
        _ batch: String, following feed: JobProgressFeed, checkingEvery interval: Duration = .seconds(5),
        logger: Logger? = nil, progress: (BatchStatus) -> Void = { _ in }
    ) async throws -> BatchStatus {
        try await FeedWait(feed: feed, interval: interval).run(
            wakesOn: { job, sinceLastCheck in
                job.batch == batch && (job.state.isFinished || sinceLastCheck >= .milliseconds(200))
            },
            check: { reason in
                let status = try await self.batchStatus(batch)
                let finished = status.doneJobs + status.deadJobs + status.cancelledJobs
                logger?.debug("checked batch \(batch) (\(finished) of \(status.totalJobs) jobs finished) \(reason)")
                progress(status)
                return status.isFinished ? status : nil
            })
    }
}
