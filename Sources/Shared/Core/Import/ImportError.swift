/// A row of an import that cannot be applied: the line, and what is wrong with it.
public struct ImportError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The 1-based line of the job's NDJSON payload.
    public let line: Int
    /// What is wrong with the row.
    public let message: String

    /// An error at `line` (0 when it concerns the job rather than one row) described by `message`.
    public init(line: Int, _ message: String) {
        self.line = line
        self.message = message
    }

    public var description: String { "line \(line): \(message)" }
}
