import Foundation

@testable import TributaryClient
@testable import TributaryCore

extension JobClient {
    /// Pushes NDJSON rows of `entity` as import jobs of `rowsPerJob` rows each.
    func pushImport(
        _ input: Data, entity: String = "PullRequest", rowsPerJob: Int, onComplete: JobSpec? = nil
    ) async throws -> PushedBatch {
        let specs = NDJSONChunker.chunks(of: input, rowsPerJob: rowsPerJob).map {
            ImportJob.spec(entity: entity, payload: $0.payload, rows: $0.rows)
        }
        return try await push(specs, onComplete: onComplete)
    }

    /// Waits (bounded) until every job of `batch` is done or failed.
    func finish(_ batch: String, timeout: Duration = .seconds(120)) async throws -> BatchStatus {
        try await withTimeout("batch \(batch) to finish", timeout) {
            try await self.waitForBatch(batch, every: .milliseconds(50))
        }
    }
}
