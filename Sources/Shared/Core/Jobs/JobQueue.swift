import TributaryProtocol

/// Named queues (Sidekiq's and Oban's): a job waits in one (`JobSpec.queue`, `default` unless pushed to another),
/// and a worker serves the queues it was started with, in order: it takes a job of the first that has one due,
/// then of the next. docs/jobs.md describes them.
public enum JobQueue {
    /// The queue of a job pushed without one, and the one a worker serves when started without `--queues`.
    public static let defaultName = Wire.defaultQueue
    /// Longest queue name, in bytes.
    public static let maximumNameLength = 64
    /// Most queues one worker serves.
    public static let maximumQueuesPerWorker = 32

    /// Why `name` cannot name a queue, or nil: 1 to 64 of `a-z`, `A-Z`, `0-9`, `_`, `-`, `.`.
    public static func refusal(of name: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= maximumNameLength else {
            return "a queue name has 1 to \(maximumNameLength) characters (got \(name.utf8.count))"
        }
        let allowed = name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == 0x5F || byte == 0x2D || byte == 0x2E
        }
        return allowed ? nil : "queue '\(name)' may hold only ASCII letters, digits, '_', '-' and '.'"
    }

    /// `a,b,c` (a worker's queues, in order) as a list, spaces around names dropped; weights (`a:3,b:1`) are
    /// read by ``weightedList(_:)``.
    /// - Throws: ``JobQueueListError`` naming what is wrong: no name, too many, a bad or repeated one.
    public static func list(_ text: String) throws -> [String] {
        let (names, weights) = try weightedList(text)
        guard weights.isEmpty else { throw JobQueueListError("weights are not taken here: name the queues only") }
        return names
    }

    /// `a,b,c` in strict order, or `a:3,b:1` weighted (every queue then has a weight from 1 to 1,000).
    /// - Returns: the names, and their weights (empty for strict order).
    /// - Throws: ``JobQueueListError`` naming what is wrong.
    public static func weightedList(_ text: String) throws -> (names: [String], weights: [UInt32]) {
        let entries = text.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        var names: [String] = []
        var weights: [UInt32] = []
        for entry in entries {
            let parts = entry.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            names.append(parts[0])
            if parts.count == 2 {
                guard let weight = UInt32(parts[1]), (1...1_000).contains(weight) else {
                    throw JobQueueListError("queue '\(parts[0])' has weight '\(parts[1])': a weight is 1 to 1000")
                }
                weights.append(weight)
            }
        }
        guard weights.isEmpty || weights.count == names.count else {
            throw JobQueueListError("give every queue a weight (a:3,b:1) or none (strict order)")
        }
        try check(names)
        return (names, weights)
    }

    private static func check(_ names: [String]) throws {
        guard !names.isEmpty, names.count <= maximumQueuesPerWorker else {
            throw JobQueueListError("name 1 to \(maximumQueuesPerWorker) queues, separated by commas")
        }
        for name in names {
            if let refusal = refusal(of: name) { throw JobQueueListError(refusal) }
        }
        guard Set(names).count == names.count else { throw JobQueueListError("a queue is named twice") }
    }

    /// `names` in the order one claim reads them: as they are without weights; with weights, drawn one after
    /// another without replacement, each with a chance in proportion to its weight.
    public static func claimOrder(
        _ names: [String], weights: [UInt32], using generator: inout some RandomNumberGenerator
    ) -> [String] {
        // Without weights (or with a weight of 0, which no hello is let through with): their strict order.
        guard weights.count == names.count, names.count > 1, weights.allSatisfy({ $0 > 0 }) else { return names }
        var left = Array(zip(names, weights))
        var order: [String] = []
        while !left.isEmpty {
            let total = left.reduce(0) { $0 + UInt64($1.1) }
            var pick = UInt64.random(in: 0..<total, using: &generator)
            let index =
                left.firstIndex { entry in
                    if pick < UInt64(entry.1) { return true }
                    pick -= UInt64(entry.1)
                    return false
                } ?? 0
            order.append(left.remove(at: index).0)
        }
        return order
    }
}

/// What is wrong with a list of queues as written.
public struct JobQueueListError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
