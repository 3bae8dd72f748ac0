import Foundation

/// A subscriber process printing one JSON line with a "seq" per commit (`tributary subscribe --format json`, the
/// Python example's subscriber): the sequence numbers it printed, in order, collected as they come.
final class SubscriberProcess: Sendable {
    let process: StartedProcess
    let seen = Locked<[Int]>([])
    private let reader: Task<Void, Never>

    /// Starts `tributary subscribe --format json` with `arguments`.
    convenience init(_ arguments: [String]) throws {
        try self.init(process: try StartedProcess.start("tributary", ["subscribe", "--format", "json"] + arguments))
    }

    /// Collects the seqs `process` prints.
    init(process: StartedProcess) throws {
        self.process = process
        let (lines, seen) = (process.outputLines, self.seen)
        reader = Task {
            for await line in lines {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let seq = object["seq"] as? Int
                else { continue }
                seen.withLock { $0.append(seq) }
            }
        }
    }

    /// The last seq printed, 0 before any.
    var last: Int { seen.withLock { $0.last ?? 0 } }
}
