import Foundation
import TributaryCore

/// Splits an NDJSON file into import job payloads of at most `rowsPerJob` non-empty lines each.
public enum NDJSONChunker {
    /// One job's worth of rows.
    public struct Chunk: Sendable {
        /// The rows, one JSON object per line, each line ending in a newline: an import job's payload.
        public let payload: Data
        /// How many rows the payload holds (the job's ``/TributaryCore/JobSpec/total``).
        public let rows: Int
    }

    /// Reads the file at `url` and cuts it into chunks.
    /// - Throws: ``ImportFileError`` naming the file when it cannot be read.
    public static func chunks(of url: URL, rowsPerJob: Int) throws -> [Chunk] {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ImportFileError(message: "cannot read \(url.path): \(error.localizedDescription)")
        }
        return chunks(of: data, rowsPerJob: rowsPerJob)
    }

    /// Cuts NDJSON bytes into chunks; blank lines are dropped.
    public static func chunks(of data: Data, rowsPerJob: Int) -> [Chunk] {
        precondition(rowsPerJob > 0, "rowsPerJob must be positive")
        var chunks: [Chunk] = []
        var payload = Data()
        var rows = 0
        for line in ImportJob.lines(of: data) {
            payload.append(data[(data.startIndex + line.range.lowerBound)..<(data.startIndex + line.range.upperBound)])
            payload.append(UInt8(ascii: "\n"))
            rows += 1
            if rows == rowsPerJob {
                chunks.append(Chunk(payload: payload, rows: rows))
                payload = Data()
                rows = 0
            }
        }
        if rows > 0 { chunks.append(Chunk(payload: payload, rows: rows)) }
        return chunks
    }
}

/// An import file that cannot be used.
public struct ImportFileError: Error, CustomStringConvertible, Sendable {
    /// A sentence naming the file and why it cannot be read.
    public let message: String
    public var description: String { message }
}
