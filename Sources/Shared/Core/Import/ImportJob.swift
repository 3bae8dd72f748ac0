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
    public static func spec(entity: String, payload: Data, rows: Int, batchSize: Int? = nil) -> JobSpec {
        var arguments = [entityArgument: entity]
        if let batchSize { arguments[batchSizeArgument] = String(batchSize) }
        return JobSpec(kind: kind, payload: payload, arguments: arguments, total: UInt64(rows))
    }

    /// A non-blank line of an NDJSON payload: its 1-based line number and its byte range (0-based offsets).
    package struct Line: Sendable {
        package let number: Int
        package let range: Range<Int>
    }

    /// How many lines an NDJSON payload has (newlines, plus a last line without one), counted without copying.
    package static func lineCount(of payload: Data) -> Int {
        payload.withUnsafeBytes { raw in
            var count = 0
            for byte in raw where byte == UInt8(ascii: "\n") { count += 1 }
            if let last = raw.last, last != UInt8(ascii: "\n") { count += 1 }
            return count
        }
    }

    /// The non-blank lines of an NDJSON payload, found in one pass without copying them.
    package static func lines(of payload: Data) -> [Line] {
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
