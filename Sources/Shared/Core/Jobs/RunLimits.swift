/// Concurrency and rate limits the coordinator enforces at claim time, across every worker: at most N jobs of a kind,
/// or of a named queue, running at once (`tributary-coordinator --limit kind:report=2 --limit queue:imports=8`), and
/// at most M started in any period (`--rate-limit kind:mail=10/1s`). A job beyond a limit waits in the queue;
/// `tributary status` shows each limit with what runs under it.
public struct RunLimits: Sendable, Equatable {
    /// At most `count` starts in any window of `seconds`.
    public struct Rate: Sendable, Equatable {
        public var count: Int
        public var seconds: Double

        public init(count: Int, seconds: Double) {
            self.count = count
            self.seconds = seconds
        }
    }

    /// Most jobs of a kind running at once, by kind.
    public var byKind: [String: Int] = [:]
    /// Most jobs of a queue running at once, by queue.
    public var byQueue: [String: Int] = [:]
    /// Most jobs of a kind started in a period, by kind.
    public var rateByKind: [String: Rate] = [:]
    /// Most jobs of a queue started in a period, by queue.
    public var rateByQueue: [String: Rate] = [:]

    public init(
        byKind: [String: Int] = [:], byQueue: [String: Int] = [:], rateByKind: [String: Rate] = [:],
        rateByQueue: [String: Rate] = [:]
    ) {
        self.byKind = byKind
        self.byQueue = byQueue
        self.rateByKind = rateByKind
        self.rateByQueue = rateByQueue
    }

    public var isEmpty: Bool { byKind.isEmpty && byQueue.isEmpty && rateByKind.isEmpty && rateByQueue.isEmpty }

    /// Whether any limit applies to a claim of `kinds` from `queues` (otherwise it takes the unlimited path).
    public func concern(kinds: [String], queues: [String]) -> Bool {
        kinds.contains { byKind[$0] != nil || rateByKind[$0] != nil }
            || queues.contains { byQueue[$0] != nil || rateByQueue[$0] != nil }
    }

    /// Adds one `kind:NAME=M/PERIOD` or `queue:NAME=M/PERIOD`: M from 1 to 100,000 starts in any PERIOD of 1 s to
    /// a day (`1s`, `1500ms`, `5m`, `1h`; a bare number is seconds). Held-back jobs go out at the router's
    /// dispatches, twice a second, so a shorter period could not be kept to.
    /// - Throws: ``RunLimitError`` naming what is wrong with `text`.
    public mutating func addRate(_ text: String) throws {
        let usage = "'\(text)' is not kind:NAME=M/PERIOD or queue:NAME=M/PERIOD (e.g. kind:mail=10/1s)"
        guard let equals = text.lastIndex(of: "="), let slash = text.lastIndex(of: "/"), equals < slash,
            let count = Int(text[text.index(after: equals)..<slash]), (1...100_000).contains(count),
            let seconds = Self.seconds(String(text[text.index(after: slash)...])), seconds >= 1, seconds <= 86_400
        else { throw RunLimitError(usage) }
        switch try Self.target(text[..<equals], in: text, usage: usage) {
        case .kind(let kind): rateByKind[kind] = Rate(count: count, seconds: seconds)
        case .queue(let queue): rateByQueue[queue] = Rate(count: count, seconds: seconds)
        }
    }

    /// What a limit applies to.
    private enum Target {
        case kind(String)
        case queue(String)
    }

    /// `kind:NAME` or `queue:NAME` (a valid queue name) of `text`.
    private static func target(_ target: Substring, in text: String, usage: String) throws -> Target {
        if target.hasPrefix("kind:"), !target.dropFirst(5).isEmpty { return .kind(String(target.dropFirst(5))) }
        guard target.hasPrefix("queue:") else { throw RunLimitError(usage) }
        let queue = String(target.dropFirst(6))
        if let refusal = JobQueue.refusal(of: queue) { throw RunLimitError("'\(text)': \(refusal)") }
        return .queue(queue)
    }

    /// `500ms`, `2s`, `5m`, `1h` or a number of seconds.
    private static func seconds(_ text: String) -> Double? {
        for (suffix, factor) in [("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * factor }
        }
        return Double(text)
    }

    /// Adds one `kind:NAME=N` or `queue:NAME=N` (N from 1 to 100,000).
    /// - Throws: ``RunLimitError`` naming what is wrong with `text`.
    public mutating func add(_ text: String) throws {
        guard let equals = text.lastIndex(of: "="), let count = Int(text[text.index(after: equals)...]),
            (1...100_000).contains(count)
        else {
            throw RunLimitError("'\(text)' is not kind:NAME=N or queue:NAME=N with N from 1 to 100000")
        }
        switch try Self.target(text[..<equals], in: text, usage: "'\(text)' names neither kind:NAME nor queue:NAME") {
        case .kind(let kind): byKind[kind] = count
        case .queue(let queue): byQueue[queue] = count
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
