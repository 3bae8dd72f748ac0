import Foundation
import TributaryCore
import TributaryProtocol

/// Runs `import` jobs: parses the rows, upserts them in a slave context, and saves every `batch_size` rows.
/// A retried attempt resumes after the batches earlier attempts committed.
public struct ImportJobHandler: JobHandler {
    public let kind = ImportJob.kind

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
        let context = job.makeContext()
        var start = min(Int(job.committedBatches) * batchSize, lines.count)
        while start < lines.count {
            try job.checkCancellation()
            let end = min(start + batchSize, lines.count)
            let batch = Array(lines[start..<end])
            let payload = job.spec.payload
            try await context.perform { context in
                try payload.withUnsafeBytes { raw in
                    let bytes = raw.bindMemory(to: UInt8.self)
                    for line in batch {
                        try decoder.apply(
                            UnsafeBufferPointer(rebasing: bytes[line.range]), number: line.number, to: context)
                    }
                }
            }
            if end == lines.count { break }
            try await job.save(context, progress: UInt64(end))
            start = end
        }
        try await job.complete(context, progress: UInt64(lines.count))
    }
}
