import Foundation
import TributaryCore
import TributaryProtocol

/// The jobs' requests, whichever transport brings them (`JobsRequest` and the others over ZeroMQ, `/api/jobs` over
/// HTTP): listing and showing jobs read what is committed; retrying, cancelling and deleting a job are writes queued
/// behind the saves before them.
package struct JobsHandler: Sendable {
    let parts: HandlerParts

    /// Jobs per list when a request does not say, and the most one may ask for.
    static let defaultListLimit = 50
    static let maximumListLimit = 1_000

    /// The newest jobs, newest first, in `state` and `batch` when given, with ids below `before` (the next page).
    /// - Parameter limit: how many; nil or 0 for ``defaultListLimit``, at most ``maximumListLimit``.
    package func list(state: JobState?, batch: String?, limit: Int?, before: Int64?) -> Promised<[JobInfo]> {
        let count = min(limit.flatMap { $0 > 0 ? $0 : nil } ?? Self.defaultListLimit, Self.maximumListLimit)
        let store = parts.store
        return RequestPlace.committed(parts) {
            try await store.jobs.list(
                state: state, batch: batch?.isEmpty == false ? batch : nil, limit: count, before: before)
        }
    }

    /// One job, and why it waits (``JobReader``).
    /// - Throws (from the value): ``/TributaryProtocol/ProtocolError`` `UNKNOWN_JOB`.
    package func show(_ id: Int64) -> Promised<JobInfo> {
        let reader = JobReader(store: parts.store, limits: parts.configuration.runLimits, snapshot: parts.snapshot)
        return RequestPlace.committed(parts) { try await reader.job(id) }
    }

    /// Puts a dead or cancelled job back in the queue; a child retried while a parent is still failed is settled again
    /// at once.
    package func retry(_ id: Int64) throws -> Promised<JobInfo> {
        let (logger, tell) = (parts.logger, parts.tell)
        return try RequestPlace.written(.retryJob(id: id), parts, jobID: id) { retried in
            guard let retried else { return }
            logger.info("dead job retried", metadata: ["job": "\(id)"])
            tell(.settled(retried.settled))
        }.map { retried in
            guard let retried else { throw Self.unknown(id) }
            return retried.job
        }
    }

    /// Cancels a job that has not finished; a running attempt's worker is told to stop it, and the jobs waiting for
    /// it are settled by their policy.
    package func cancel(_ id: Int64) throws -> Promised<JobInfo> {
        let (logger, tell) = (parts.logger, parts.tell)
        return try RequestPlace.written(.cancelJob(id: id), parts, jobID: id) { cancelled in
            guard let (before, endings) = cancelled else { return }
            if before.state == .running { tell(.attemptCancelled(job: id, attempt: before.attempt)) }
            // Cancelling may have finished a batch whose callback job is now queued.
            tell(.settled(endings))
            logger.info("job cancelled", metadata: ["job": "\(id)", "was": "\(before.state.rawValue)"])
        }.map { cancelled in
            guard let (before, _) = cancelled else { throw Self.unknown(id) }
            var after = before
            after.state = .cancelled
            after.worker = nil
            return after
        }
    }

    /// Deletes a job that is not running.
    package func delete(_ id: Int64) throws -> Promised<JobInfo> {
        let logger = parts.logger
        return try RequestPlace.written(.deleteJob(id: id), parts, jobID: id) { job in
            guard let job else { return }
            logger.info("job deleted", metadata: ["job": "\(id)", "state": "\(job.state.rawValue)"])
        }.map { job in
            guard let job else { throw Self.unknown(id) }
            return job
        }
    }

    private static func unknown(_ id: Int64) -> ProtocolError {
        ProtocolError(.unknownJob, "job \(id) does not exist", jobID: UInt64(id))
    }
}
