import Foundation
import TributaryCore
import TributaryProtocol

/// What a push of jobs must be to be written: each job's kind, sizes, queue and parents, and the batch's callback.
/// The router writes a checked push with the saves it gathers (a push goes through the group commit, whose
/// answers it shares); these are its checks, whatever transport brings it.
struct PushCheck: Sendable {
    let configuration: CoordinatorConfiguration

    /// Most parents (jobs and batches) one job may name.
    static let maximumParents = 1_000

    /// Checks a push of `specs` with `onComplete` as its batch's callback.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming the job and what is wrong with it.
    func check(_ specs: [JobSpec], onComplete: JobSpec?) throws {
        guard !specs.isEmpty else { throw ProtocolError(.invalidRequest, "PushJobs carries no jobs") }
        for (index, spec) in specs.enumerated() { try check(spec, index: index) }
        if let callback = onComplete {
            guard !callback.kind.isEmpty, callback.kind != ImportJob.kind else {
                throw ProtocolError(.invalidRequest, "on_complete needs a kind, and not import (it has no rows)")
            }
            guard callback.payload.isEmpty, callback.runAt == nil, callback.uniqueKey == nil, callback.total == 0,
                !callback.hasParents
            else {
                throw ProtocolError(
                    .invalidRequest,
                    "on_complete may set kind, arguments, queue, priority, max_attempts, backoff and timeout_ms only")
            }
            if let refusal = JobQueue.refusal(of: callback.queue) {
                throw ProtocolError(.invalidRequest, "on_complete: \(refusal)")
            }
        }
        let (_, overflow) = specs.reduce((Int64(0), false)) { sum, spec in
            let (total, overflow) = sum.0.addingReportingOverflow(Int64(spec.total))
            return (total, sum.1 || overflow)
        }
        if overflow { throw ProtocolError(.invalidRequest, "the jobs' totals add up to more than \(Int64.max)") }
    }

    private func check(_ spec: JobSpec, index: Int) throws {
        guard !spec.kind.isEmpty else {
            throw ProtocolError(.invalidRequest, "job \(index) of the push has no kind")
        }
        guard spec.total <= Intake.maximumProgress else {
            throw ProtocolError(
                .invalidRequest, "total of job \(index) \(spec.total) is larger than \(Intake.maximumProgress)")
        }
        guard (spec.uniqueKey ?? "").utf8.count <= 256 else {
            throw ProtocolError(.invalidRequest, "job \(index) has a unique_key longer than 256 bytes")
        }
        if let refusal = JobQueue.refusal(of: spec.queue) {
            throw ProtocolError(.invalidRequest, "job \(index): \(refusal)")
        }
        let parents = spec.afterJobs.count + spec.afterBatches.count + spec.afterPushed.count
        guard parents <= Self.maximumParents else {
            throw ProtocolError(
                .invalidRequest,
                "job \(index) names \(parents) parents; at most \(Self.maximumParents) (a batch counts as one)")
        }
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
        guard spec.kind == ImportJob.kind else { return }
        let rows = ImportJob.lineCount(of: spec.payload)
        let rowLimit = configuration.limits.maximumPayloadRows
        guard rows <= rowLimit else {
            throw ProtocolError(
                .tooLarge, "import job \(index) has \(rows) rows; the limit is \(rowLimit) (--max-payload-rows)")
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
