import Foundation
import TributaryCore
import TributaryProtocol

extension CoordinatorServer {
    func pushJobs(_ push: Tributary_V1_PushJobs, from peer: Data, requestID: UInt64) async throws {
        if stopping { throw ProtocolError(.shuttingDown, "the coordinator is shutting down") }
        guard !push.jobs.isEmpty else { throw ProtocolError(.invalidRequest, "PushJobs carries no jobs") }
        for (index, spec) in push.jobs.enumerated() {
            try validate(spec, index: index)
        }
        if push.hasOnComplete {
            let callback = push.onComplete
            guard !callback.kind.isEmpty, callback.kind != ImportJob.kind else {
                throw ProtocolError(.invalidRequest, "on_complete needs a kind, and not import (it has no rows)")
            }
            guard callback.payload.isEmpty, callback.runAt == 0, callback.uniqueKey.isEmpty, callback.total == 0,
                callback.afterJobs.isEmpty, callback.afterBatches.isEmpty, callback.afterPushed.isEmpty
            else {
                throw ProtocolError(
                    .invalidRequest,
                    "on_complete may set kind, arguments, queue, priority, max_attempts, backoff and timeout_ms only")
            }
            if !callback.queue.isEmpty, let refusal = JobQueue.refusal(of: callback.queue) {
                throw ProtocolError(.invalidRequest, "on_complete: \(refusal)")
            }
        }
        let (_, overflow) = push.jobs.reduce((Int64(0), false)) { sum, spec in
            let (total, overflow) = sum.0.addingReportingOverflow(Int64(spec.total))
            return (total, sum.1 || overflow)
        }
        if overflow { throw ProtocolError(.invalidRequest, "the jobs' totals add up to more than \(Int64.max)") }
        let batch = push.batch.isEmpty ? UUID().uuidString.lowercased() : push.batch
        // Behind the saves received before it (a push must not overtake them: one may finish a job whose unique
        // key it reuses); answered once written, and meanwhile saves go on gathering.
        await submit()
        guard
            await writer.push(
                .init(
                    peer: peer, requestID: requestID, batch: batch, specs: try push.jobs.map(JobSpec.init(checking:)),
                    onComplete: push.hasOnComplete ? JobSpec(push.onComplete) : nil))
        else {
            throw ProtocolError(.shuttingDown, "the coordinator is shutting down")
        }
    }

    /// Most parents (jobs and batches) one job may name.
    static let maximumParents = 1_000

    private func validate(_ spec: Tributary_V1_JobSpec, index: Int) throws {
        guard !spec.kind.isEmpty else {
            throw ProtocolError(.invalidRequest, "job \(index) of the push has no kind")
        }
        try Intake.requireProgress(spec.total, "total of job \(index)")
        guard spec.runAt.isFinite && spec.runAt >= 0 else {
            throw ProtocolError(.invalidRequest, "job \(index) has a run_at that is not a time")
        }
        guard spec.uniqueKey.utf8.count <= 256 else {
            throw ProtocolError(.invalidRequest, "job \(index) has a unique_key longer than 256 bytes")
        }
        if !spec.queue.isEmpty, let refusal = JobQueue.refusal(of: spec.queue) {
            throw ProtocolError(.invalidRequest, "job \(index): \(refusal)")
        }
        let parents = spec.afterJobs.count + spec.afterBatches.count + spec.afterPushed.count
        guard parents <= Self.maximumParents else {
            throw ProtocolError(
                .invalidRequest,
                "job \(index) names \(parents) parents; at most \(Self.maximumParents) (a batch counts as one)")
        }
        for parent in spec.afterJobs { try Intake.requireInt64(parent, "after_jobs of job \(index)") }
        if let position = spec.afterPushed.first(where: { $0 >= index }) {
            throw ProtocolError(
                .invalidRequest,
                "job \(index) of the push waits for job \(position) of the push: after_pushed names earlier jobs only")
        }
        let limit = configuration.limits.maximumPayloadBytes
        guard spec.payload.count <= limit else {
            throw ProtocolError(
                .tooLarge,
                "job \(index) has a payload of \(spec.payload.count) bytes; the limit is \(limit) (--max-payload-mb)")
        }
        if spec.kind == ImportJob.kind {
            let rows = ImportJob.lineCount(of: spec.payload)
            let rowLimit = configuration.limits.maximumPayloadRows
            guard rows <= rowLimit else {
                throw ProtocolError(
                    .tooLarge,
                    "import job \(index) has \(rows) rows; the limit is \(rowLimit) (--max-payload-rows)")
            }
            guard let entity = spec.arguments[ImportJob.entityArgument], !entity.isEmpty else {
                throw ProtocolError(.invalidRequest, "import job \(index) has no \"entity\" argument")
            }
            guard configuration.model.entity(named: entity) != nil else {
                let known = configuration.model.entities.map(\.name).joined(separator: ", ")
                throw ProtocolError(.unknownEntity, "unknown entity '\(entity)' (the model has \(known))")
            }
        }
    }

    /// Answered by the reader pool from the store and the router's last published state, so a status (asked each
    /// second by `/metrics` and every open dashboard) never holds up the router.
    func status(from peer: Data, requestID: UInt64) throws {
        try readers.submit(peer: peer, requestID: requestID) { [statusReader] in
            .statusReply(try await statusReader.reply())
        }
    }

    /// Answered by the reader pool from the store.
    func batchStatus(_ request: Tributary_V1_BatchStatusRequest, from peer: Data, requestID: UInt64) throws {
        guard !request.batch.isEmpty else { throw ProtocolError(.invalidRequest, "BatchStatusRequest has no batch") }
        let store = store
        try readers.submit(peer: peer, requestID: requestID) {
            let status = try await store.jobs.batchStatus(request.batch)
            guard status.totalJobs > 0 else {
                throw ProtocolError(.unknownJob, "no jobs were pushed as batch '\(request.batch)'")
            }
            return .batchStatusReply(status.wire)
        }
    }
}
