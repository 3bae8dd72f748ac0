/// Concurrency limits the coordinator enforces at claim time, across every worker: at most N jobs of a kind, or of
/// a named queue, running at once (`tributary-coordinator --limit kind:report=2 --limit queue:imports=8`). A job
/// beyond a limit waits in the queue; `tributary status` shows each limit with what runs under it.
public struct RunLimits: Sendable, Equatable {
    /// Most jobs of a kind running at once, by kind.
    public var byKind: [String: Int] = [:]
    /// Most jobs of a queue running at once, by queue.
    public var byQueue: [String: Int] = [:]

    public init(byKind: [String: Int] = [:], byQueue: [String: Int] = [:]) {
        self.byKind = byKind
        self.byQueue = byQueue
    }

    public var isEmpty: Bool { byKind.isEmpty && byQueue.isEmpty }

    /// Adds one `kind:NAME=N` or `queue:NAME=N` (N from 1 to 100,000).
    /// - Throws: ``RunLimitError`` naming what is wrong with `text`.
    public mutating func add(_ text: String) throws {
        guard let equals = text.lastIndex(of: "="), let count = Int(text[text.index(after: equals)...]),
            (1...100_000).contains(count)
        else {
            throw RunLimitError("'\(text)' is not kind:NAME=N or queue:NAME=N with N from 1 to 100000")
        }
        let target = text[..<equals]
        if target.hasPrefix("kind:"), !target.dropFirst(5).isEmpty {
            byKind[String(target.dropFirst(5))] = count
        } else if target.hasPrefix("queue:") {
            let queue = String(target.dropFirst(6))
            if let refusal = JobQueue.refusal(of: queue) { throw RunLimitError("'\(text)': \(refusal)") }
            byQueue[queue] = count
        } else {
            throw RunLimitError("'\(text)' names neither kind:NAME nor queue:NAME")
        }
    }
}

/// What is wrong with a concurrency limit as written.
public struct RunLimitError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
