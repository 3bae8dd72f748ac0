/// Named queues (Sidekiq's and Oban's): a job waits in one (`JobSpec.queue`, `default` unless pushed to another),
/// and a worker serves the queues it was started with, in order: it takes a job of the first that has one due,
/// then of the next. docs/jobs.md describes them.
public enum JobQueue {
    /// The queue of a job pushed without one, and the one a worker serves when started without `--queues`.
    public static let defaultName = "default"
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
        return allowed ? nil : "queue '\(name)' may hold only letters, digits, '_', '-' and '.'"
    }

    /// `a,b,c` (a worker's queues, in order) as a list, spaces around names dropped.
    /// - Throws: ``JobQueueListError`` naming what is wrong: no name, too many, a bad or repeated one.
    public static func list(_ text: String) throws -> [String] {
        let names = text.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard !names.isEmpty, names.count <= maximumQueuesPerWorker else {
            throw JobQueueListError("name 1 to \(maximumQueuesPerWorker) queues, separated by commas")
        }
        for name in names {
            if let refusal = refusal(of: name) { throw JobQueueListError(refusal) }
        }
        guard Set(names).count == names.count else { throw JobQueueListError("a queue is named twice") }
        return names
    }
}

/// What is wrong with a list of queues as written.
public struct JobQueueListError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
