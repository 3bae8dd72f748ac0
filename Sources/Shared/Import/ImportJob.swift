import Foundation

/// The built-in `import` job: NDJSON rows of one entity, upserted in batches.
public enum ImportJob {
    /// The job kind.
    public static let kind = "import"
    /// The argument naming the entity the rows belong to.
    public static let entityArgument = "entity"
    /// The optional argument setting how many rows go into one save (default 1,000).
    public static let batchSizeArgument = "batch_size"
    /// Rows per save when the job does not say.
    public static let defaultBatchSize = 1000

    /// The job spec for `payload` (NDJSON lines) of `entity`.
    public static func spec(entity: String, payload: Data, rows: Int, batchSize: Int? = nil) -> Tributary_V1_JobSpec {
        Tributary_V1_JobSpec.with {
            $0.kind = kind
            $0.payload = payload
            $0.arguments[entityArgument] = entity
            if let batchSize { $0.arguments[batchSizeArgument] = String(batchSize) }
            $0.total = UInt64(rows)
        }
    }

    /// A non-blank line of an NDJSON payload: its 1-based line number and its byte range (0-based offsets).
    struct Line: Sendable {
        let number: Int
        let range: Range<Int>
    }

    /// How many lines an NDJSON payload has (newlines, plus a last line without one), counted without copying.
    static func lineCount(of payload: Data) -> Int {
        payload.withUnsafeBytes { raw in
            var count = 0
            for byte in raw where byte == UInt8(ascii: "\n") { count += 1 }
            if let last = raw.last, last != UInt8(ascii: "\n") { count += 1 }
            return count
        }
    }

    /// The non-blank lines of an NDJSON payload, found in one pass without copying them.
    static func lines(of payload: Data) -> [Line] {
        payload.withUnsafeBytes { raw in
            var lines: [Line] = []
            var number = 0
            var start = 0
            var blank = true
            for (offset, byte) in raw.enumerated() {
                switch byte {
                case UInt8(ascii: "\n"):
                    number += 1
                    if !blank { lines.append(Line(number: number, range: start..<offset)) }
                    start = offset + 1
                    blank = true
                case UInt8(ascii: " "), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                    break
                default:
                    blank = false
                }
            }
            if !blank { lines.append(Line(number: number + 1, range: start..<raw.count)) }
            return lines
        }
    }
}

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
