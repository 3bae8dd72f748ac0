import Foundation
import TributaryCore
import TributaryProtocol

/// Pushing jobs, following batches, and looking at, cancelling, retrying and deleting jobs.
extension JobClient {
    /// Enqueues `jobs` as one batch: `batch` (a new name makes it, an open batch gains the jobs), or a new one the
    /// coordinator names when empty; `onComplete` is the batch's callback job, pushed once every job of the batch is
    /// done, dead or cancelled.
    /// - Returns: the batch and the jobs' ids, in order; a job not enqueued because another holds its unique key has
    ///   that job's id, and its position is among the duplicates.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming the problem (unknown entity, payload too large, a
    ///   finished batch, ...).
    public func push(_ jobs: [JobSpec], batch: String = "", onComplete: JobSpec? = nil) async throws -> PushedBatch {
        let push = Tributary_V1_PushJobs.with {
            $0.jobs = jobs.map(\.wire)
            $0.batch = batch
            if let onComplete { $0.onComplete = onComplete.wire }
        }
        let reply = try await connection.request(.pushJobs(push), timeout: .seconds(60))
        guard case .pushReply(let pushed) = reply.body else { throw Self.unexpected(reply) }
        return PushedBatch(pushed)
    }

    /// Progress of a batch of jobs.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` `UNKNOWN_JOB` when no job was pushed as `batch`.
    public func batchStatus(_ batch: String) async throws -> BatchStatus {
        let reply = try await connection.request(.batchStatusRequest(.with { $0.batch = batch }))
        guard case .batchStatusReply(let status) = reply.body else { throw Self.unexpected(reply) }
        return BatchStatus(status)
    }

    /// Polls a batch until every job is done, dead or cancelled, reporting each answer to `progress`.
    /// - Returns: the batch's last status.
    public func waitForBatch(
        _ batch: String, every interval: Duration = .milliseconds(200), progress: (BatchStatus) -> Void = { _ in }
    ) async throws -> BatchStatus {
        while true {
            let status = try await batchStatus(batch)
            progress(status)
            if status.isFinished { return status }
            try await Task.sleep(for: interval)
        }
    }

    /// Jobs, newest first, optionally of one state or batch.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming what the coordinator refused.
    public func jobs(state: JobState? = nil, batch: String? = nil, limit: Int = 50) async throws -> [JobInfo] {
        let request = Tributary_V1_JobsRequest.with {
            $0.state = state?.rawValue ?? ""
            $0.batch = batch ?? ""
            $0.limit = UInt32(clamping: limit)
        }
        let reply = try await connection.request(.jobsRequest(request))
        guard case .jobsReply(let jobs) = reply.body else { throw Self.unexpected(reply) }
        return try jobs.jobs.map(JobInfo.init)
    }

    /// One job, with its error history.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` `UNKNOWN_JOB` when it does not exist.
    public func job(_ id: Int64) async throws -> JobInfo {
        try await jobReply(.jobRequest(.with { $0.jobID = UInt64(clamping: id) }))
    }

    /// Cancels a waiting, queued or running job.
    /// - Returns: the job, now cancelled.
    public func cancel(_ id: Int64) async throws -> JobInfo {
        try await jobReply(.cancelJobRequest(.with { $0.jobID = UInt64(clamping: id) }))
    }

    /// Deletes a finished job (done, dead or cancelled) and its payload.
    /// - Returns: the job as it was before.
    public func delete(_ id: Int64) async throws -> JobInfo {
        try await jobReply(.deleteJobRequest(.with { $0.jobID = UInt64(clamping: id) }))
    }

    /// Puts a dead job back in the queue with all its attempts again: none of its runs count against its maximum any
    /// more (``/TributaryCore/JobInfo/attemptsCounted``), and its next run is numbered after them.
    /// - Returns: the job, queued again.
    public func retry(_ id: Int64) async throws -> JobInfo {
        try await jobReply(.retryJobRequest(.with { $0.jobID = UInt64(clamping: id) }))
    }

    /// The job the coordinator answers `request` with.
    private func jobReply(_ request: Tributary_V1_Envelope.OneOf_Body) async throws -> JobInfo {
        let reply = try await connection.request(request)
        guard case .jobInfo(let job) = reply.body else { throw Self.unexpected(reply) }
        return try JobInfo(job)
    }
}
