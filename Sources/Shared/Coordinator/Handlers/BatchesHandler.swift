import Foundation
import TributaryCore
import TributaryProtocol

/// Job batches (the jobs of one push): a batch's progress and the recent batches, from what is committed.
package struct BatchesHandler: Sendable {
    let parts: HandlerParts

    /// Batch `batch`'s jobs and rows by state.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` for an empty name; from the value, `UNKNOWN_JOB` when no job
    ///   was pushed as that batch.
    package func status(_ batch: String) throws -> Promised<BatchStatus> {
        guard !batch.isEmpty else { throw ProtocolError(.invalidRequest, "BatchStatusRequest has no batch") }
        let store = parts.store
        return RequestPlace.committed(parts) {
            let status = try await store.jobs.batchStatus(batch)
            guard status.totalJobs > 0 else {
                throw ProtocolError(.unknownJob, "no jobs were pushed as batch '\(batch)'")
            }
            return status
        }
    }

    /// The batches pushed last, newest first (the dashboard's).
    package func recent() -> Promised<[BatchStatus]> {
        let store = parts.store
        return RequestPlace.committed(parts) { try await store.jobs.recentBatches() }
    }
}
