import Foundation
import TributaryCore
import TributaryProtocol

/// Requests that look at jobs or put dead ones back.
extension CoordinatorServer {
    /// Answered by the reader pool: a job list from the store.
    func listJobs(_ request: Tributary_V1_JobsRequest, from peer: Data, requestID: UInt64) throws {
        let state = request.state.isEmpty ? nil : try JobState(wire: request.state)
        try Intake.requireInt64(request.beforeID, "before_id")
        let limit = request.limit == 0 ? 50 : min(Int(request.limit), 1_000)
        let store = store
        try readers.submit(peer: peer, requestID: requestID) {
            let jobs = try await store.jobs.list(
                state: state, batch: request.batch.isEmpty ? nil : request.batch,
                limit: limit, before: request.beforeID == 0 ? nil : Int64(request.beforeID))
            return .jobsReply(.with { $0.jobs = jobs.map(\.wire) })
        }
    }

    /// Answered by the reader pool: the job, and why it waits (``JobReader``).
    func showJob(_ id: UInt64, from peer: Data, requestID: UInt64) throws {
        try Intake.requireInt64(id, "job_id")
        try readers.submit(peer: peer, requestID: requestID) { [jobReader] in
            .jobInfo(try await jobReader.job(Int64(id)).wire)
        }
    }

    /// A job's reads answered off the router, with its state as of its last step.
    nonisolated var jobReader: JobReader {
        JobReader(store: store, limits: configuration.runLimits, snapshot: snapshot)
    }

    /// A status answered off the router, with its state as of its last step.
    nonisolated var statusReader: StatusReader {
        StatusReader(store: store, limits: configuration.runLimits, snapshot: snapshot)
    }

    func retryJob(_ id: UInt64, from peer: Data, requestID: UInt64) throws {
        try Intake.requireInt64(id, "job_id")
        answer(after: .retryJob(id: Int64(id)), to: peer, requestID: requestID, jobID: id) { [self] retried in
            guard let retried else { throw ProtocolError(.unknownJob, "job \(id) does not exist", jobID: id) }
            logger.info("dead job retried", metadata: ["job": "\(id)"])
            // A child retried while a parent is still failed is settled again at once.
            jobsEnded(retried.settled)
            handOver.isDue = true
            return .jobInfo(retried.job.wire)
        }
    }

    func cancelJob(_ id: UInt64, from peer: Data, requestID: UInt64) throws {
        try Intake.requireInt64(id, "job_id")
        answer(after: .cancelJob(id: Int64(id)), to: peer, requestID: requestID, jobID: id) { [self] cancelled in
            guard let (before, endings) = cancelled else {
                throw ProtocolError(.unknownJob, "job \(id) does not exist", jobID: id)
            }
            if before.state == .running, let holder = workers.routingID(holding: Int64(id)) {
                workers[holder]?.jobs[Int64(id)] = nil
                reply(
                    to: holder, requestID: 0,
                    .cancelJob(
                        .with {
                            $0.jobID = id
                            $0.attempt = UInt32(clamping: before.attempt)
                        }))
            }
            jobsEnded(endings)
            // Cancelling may have finished a batch whose callback job is now queued.
            handOver.isDue = true
            logger.info("job cancelled", metadata: ["job": "\(id)", "was": "\(before.state.rawValue)"])
            var after = before
            after.state = .cancelled
            after.worker = nil
            return .jobInfo(after.wire)
        }
    }

    func deleteJob(_ id: UInt64, from peer: Data, requestID: UInt64) throws {
        try Intake.requireInt64(id, "job_id")
        answer(after: .deleteJob(id: Int64(id)), to: peer, requestID: requestID, jobID: id) { [logger] job in
            guard let job else { throw ProtocolError(.unknownJob, "job \(id) does not exist", jobID: id) }
            logger.info("job deleted", metadata: ["job": "\(id)", "state": "\(job.state.rawValue)"])
            return .jobInfo(job.wire)
        }
    }
}
