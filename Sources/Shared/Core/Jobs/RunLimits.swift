/// Concurrency and rate limits the coordinator enforces at claim time, across every worker: at most N jobs of a kind,
/// or of a named queue, running at once (`tributary-coordinator --limit kind:report=2 --limit queue:imports=8`), and
/// at most M started in any period (`--rate-limit kind:mail=10/1s`), either also per value of an argument
/// (`--limit kind:export/customer=2`). A job beyond a limit waits in the queue;
/// `tributary status` shows each limit with what runs under it.
public struct RunLimits: Sendable, Equatable {
    /// At most `count` starts in any window of `seconds`.
    public struct Rate: Sendable, Equatable {
        /// Most jobs started in one window.
        public var count: Int
        /// The window's length, in seconds.
        public var seconds: Double

        /// At most `count` starts in any `seconds`.
        public init(count: Int, seconds: Double) {
            self.count = count
            self.seconds = seconds
        }
    }

    /// What a limit applies to: the jobs of a kind, or of a named queue.
    public enum Target: Sendable, Equatable {
        /// The jobs of the kind named.
        case kind(String)
        /// The jobs of the named queue.
        case queue(String)

        /// `kind:NAME` or `queue:NAME`.
        public var description: String {
            switch self {
            case .kind(let name): "kind:\(name)"
            case .queue(let name): "queue:\(name)"
            }
        }

        /// Whether a job of `kind` in `queue` is under it.
        public func covers(kind: String, queue: String) -> Bool {
            switch self {
            case .kind(let name): name == kind
            case .queue(let name): name == queue
            }
        }
    }

    /// A limit kept per value of one of the jobs' arguments (`kind:export/customer=2`: at most 2 exports running
    /// per customer). Jobs without the argument count under the empty value.
    public struct PerArgument: Sendable, Equatable {
        /// The jobs it applies to.
        public var target: Target
        /// The argument whose values the limit is kept per.
        public var argument: String
        /// Most running at once, or (with `rate`) started per period, per value.
        public var count: Int
        /// The period, for a rate limit; nil for a concurrency limit.
        public var rate: Rate?

        /// `kind:NAME/ARGUMENT` or `queue:NAME/ARGUMENT`.
        public var name: String { "\(target.description)/\(argument)" }
    }

    /// Limits per argument value, in the order given.
    public var perArgument: [PerArgument] = []

    /// Most jobs of a kind running at once, by kind.
    public var byKind: [String: Int] = [:]
    /// Most jobs of a queue running at once, by queue.
    public var byQueue: [String: Int] = [:]
    /// Most jobs of a kind started in a period, by kind.
    public var rateByKind: [String: Rate] = [:]
    /// Most jobs of a queue started in a period, by queue.
    public var rateByQueue: [String: Rate] = [:]

    /// Limits by kind and by queue; per-argument limits are added with ``add(_:)`` and ``addRate(_:)``.
    public init(
        byKind: [String: Int] = [:], byQueue: [String: Int] = [:], rateByKind: [String: Rate] = [:],
        rateByQueue: [String: Rate] = [:]
    ) {
        self.byKind = byKind
        self.byQueue = byQueue
        self.rateByKind = rateByKind
        self.rateByQueue = rateByQueue
    }

    /// Whether there is no limit at all.
    public var isEmpty: Bool {
        byKind.isEmpty && byQueue.isEmpty && rateByKind.isEmpty && rateByQueue.isEmpty && perArgument.isEmpty
    }

    /// Whether any limit applies to a claim of `kinds` from `queues` (otherwise it takes the unlimited path).
    public func concern(kinds: [String], queues: [String]) -> Bool {
        kinds.contains { byKind[$0] != nil || rateByKind[$0] != nil }
            || queues.contains { byQueue[$0] != nil || rateByQueue[$0] != nil }
            || !perArgument(kinds: kinds, queues: queues).isEmpty
    }

    /// The per-argument limits that may apply to a claim of `kinds` from `queues`.
    public func perArgument(kinds: [String], queues: [String]) -> [PerArgument] {
        perArgument.filter { limit in
            switch limit.target {
            case .kind(let name): kinds.contains(name)
            case .queue(let name): queues.contains(name)
            }
        }
    }

    /// Adds one `kind:NAME=M/PERIOD` or `queue:NAME=M/PERIOD` (with `/ARGUMENT` after the name: per value of that
    /// argument): M from 1 to 100,000 starts in any PERIOD of 1 s to a day (`1s`, `1500ms`, `5m`, `1h`; a bare
    /// number is seconds). A held-back job goes out when its window has room again.
    /// - Throws: ``RunLimitError`` naming what is wrong with `text`.
    public mutating func addRate(_ text: String) throws {
        let usage =
            "'\(text)' is not kind:NAME[/ARGUMENT]=M/PERIOD or queue:NAME[/ARGUMENT]=M/PERIOD (e.g. kind:mail=10/1s)"
        guard let equals = text.lastIndex(of: "="), let slash = text.lastIndex(of: "/"), equals < slash,
            let count = Int(text[text.index(after: equals)..<slash]), (1...100_000).contains(count),
            let seconds = Self.seconds(String(text[text.index(after: slash)...])), seconds >= 1, seconds <= 86_400
        else { throw RunLimitError(usage) }
        let rate = Rate(count: count, seconds: seconds)
        let (target, argument) = try Self.target(text[..<equals], in: text, usage: usage)
        if let argument {
            perArgument.removeAll { $0.target == target && $0.argument == argument && $0.rate != nil }
            perArgument.append(PerArgument(target: target, argument: argument, count: count, rate: rate))
            return
        }
        switch target {
        case .kind(let kind): rateByKind[kind] = rate
        case .queue(let queue): rateByQueue[queue] = rate
        }
    }

    /// `kind:NAME` or `queue:NAME` (a valid queue name) of `text`, and the argument after a `/`, if any.
    private static func target(_ target: Substring, in text: String, usage: String) throws -> (Target, String?) {
        var name = target
        var argument: String?
        if let slash = target.firstIndex(of: "/") {
            name = target[..<slash]
            let key = String(target[target.index(after: slash)...])
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
            guard !key.isEmpty, key.count <= 64, key.allSatisfy(allowed.contains) else {
                throw RunLimitError(
                    "'\(text)': the argument after '/' must be 1 to 64 letters, digits, '_', '-' or '.'")
            }
            argument = key
        }
        if name.hasPrefix("kind:"), !name.dropFirst(5).isEmpty { return (.kind(String(name.dropFirst(5))), argument) }
        guard name.hasPrefix("queue:") else { throw RunLimitError(usage) }
        let queue = String(name.dropFirst(6))
        if let refusal = JobQueue.refusal(of: queue) { throw RunLimitError("'\(text)': \(refusal)") }
        return (.queue(queue), argument)
    }

    /// `500ms`, `2s`, `5m`, `1h` or a number of seconds.
    private static func seconds(_ text: String) -> Double? {
        for (suffix, factor) in [("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * factor }
        }
        return Double(text)
    }

    /// Adds one `kind:NAME=N` or `queue:NAME=N` (N from 1 to 100,000), or with `/ARGUMENT` after the name, a limit
    /// per value of that argument (`kind:export/customer=2`).
    /// - Throws: ``RunLimitError`` naming what is wrong with `text`.
    public mutating func add(_ text: String) throws {
        guard let equals = text.lastIndex(of: "="), let count = Int(text[text.index(after: equals)...]),
            (1...100_000).contains(count)
        else {
            throw RunLimitError(
                "'\(text)' is not kind:NAME[/ARGUMENT]=N or queue:NAME[/ARGUMENT]=N with N from 1 to 100000")
        }
        let (target, argument) = try Self.target(
            text[..<equals], in: text, usage: "'\(text)' names neither kind:NAME nor queue:NAME")
        if let argument {
            perArgument.removeAll { $0.target == target && $0.argument == argument && $0.rate == nil }
            perArgument.append(PerArgument(target: target, argument: argument, count: count))
            return
        }
        switch target {
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
