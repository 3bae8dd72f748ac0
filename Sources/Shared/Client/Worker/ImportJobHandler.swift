import Foundation
import TributaryCore
import TributaryProtocol

/// Runs `import` jobs: parses the rows and saves every `batch_size` rows as a change set of upserts, building each
/// batch while the previous one is on the wire. A retried attempt resumes after the batches earlier attempts
/// committed.
///
/// The rows go straight into the change set's columns (`ImportChunk`), without a context: each chunk of `batch_size` rows upserts
/// its objects by their uniqueness keys at the root, as rows of different jobs do.
public struct ImportJobHandler: JobHandler {
    public let kind = ImportJob.kind

    /// The handler every worker registers for `import` jobs.
    public init() {}

    public func run(_ job: JobRun) async throws {
        guard let entityName = job.spec.arguments[ImportJob.entityArgument],
            let entity = job.model.entity(named: entityName)
        else {
            throw ImportError(line: 0, "unknown entity '\(job.spec.arguments[ImportJob.entityArgument] ?? "")'")
        }
        let batchArgument = job.spec.arguments[ImportJob.batchSizeArgument]
        let batchSize = batchArgument.map { Int($0) ?? 0 } ?? ImportJob.defaultBatchSize
        guard batchSize > 0 else {
            throw ImportError(line: 0, "batch_size must be a positive number, not '\(batchArgument ?? "")'")
        }
        let lines = ImportJob.lines(of: job.spec.payload)
        let decoder = ImportRowDecoder(entity: entity, model: job.model)
        let payload = job.spec.payload
        let model = job.model
        func build(_ range: Range<Int>) throws -> Tributary_V1_ChangeSet {
            try decoder.changeSet(of: lines[range], in: payload, model: model)
        }
        let start = min(Int(job.committedBatches) * batchSize, lines.count)
        var end = min(start + batchSize, lines.count)
        var changes = try build(start..<end)
        while end < lines.count {
            try job.checkCancellation()
            // The next batch is built while this one is on the wire; it is sent once this one is acknowledged,
            // so batches commit in order and a failed one stops the job before the next is sent.
            let sending = changes
            let done = UInt64(end)
            async let sent = job.save(sending, progress: done)
            let next = min(end + batchSize, lines.count)
            let built = Result { try build(end..<next) }
            _ = try await sent
            changes = try built.get()
            end = next
        }
        try await job.complete(changes, progress: UInt64(lines.count))
    }
}
