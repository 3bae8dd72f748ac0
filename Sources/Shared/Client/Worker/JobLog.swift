import Foundation

/// The worker's record of the job attempts it ran (`tributary-worker --job-log`): one JSON line as each attempt
/// starts and one as it ends, appended to a file, so that which worker ran what, and when, can be read afterwards
/// (the failover tests check from it that no job ran on two workers at once).
///
/// A line: `{"event":"start","job":7,"attempt":2,"worker":"e12-w1","pid":4242,"at":1765075200.125,"monotonic_ns":…}`;
/// an end adds `"outcome"`: `completed`, `lease lost`, `cancelled`, `interrupted` or `failed`. `monotonic_ns` is
/// the machine's monotonic clock, comparable between the processes of one machine; `at` is the wall clock, in
/// seconds since 1970. Lines are written on a queue of the log's own, never on the cooperative pool.
public final class JobLog: Sendable {
    /// An attempt's start or end.
    enum Event: String, Sendable {
        /// The worker was handed the attempt and starts its handler.
        case start
        /// The handler returned or threw: the attempt no longer runs here.
        case end
    }

    private let descriptor: Int32
    private let queue: DispatchQueue
    private let pid = getpid()

    private init(descriptor: Int32, queue: DispatchQueue) {
        self.descriptor = descriptor
        self.queue = queue
    }

    /// Opens `path` for appending, creating it when missing, on the log's queue.
    /// - Throws: ``JobLogError`` naming the path and the system's reason when it cannot be opened.
    public static func open(path: String) async throws -> JobLog {
        let queue = DispatchQueue(label: "tributary.job-log")
        return try await withCheckedThrowingContinuation { (opened: CheckedContinuation<JobLog, any Error>) in
            queue.async {
                let descriptor = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
                guard descriptor >= 0 else {
                    return opened.resume(throwing: JobLogError(path: path, reason: String(cString: strerror(errno))))
                }
                opened.resume(returning: JobLog(descriptor: descriptor, queue: queue))
            }
        }
    }

    /// Appends an attempt's start or end (with its `outcome`); returns at once.
    func record(
        _ event: Event, job: UInt64, attempt: UInt32, worker: String, outcome: String? = nil
    ) {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        let monotonic = Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
        let at = String(format: "%.6f", Date().timeIntervalSince1970)
        // The coordinator chose the worker id: written as a JSON string whatever it holds.
        let id = (try? JSONEncoder().encode(worker)).map { String(decoding: $0, as: UTF8.self) } ?? #""""#
        var line =
            #"{"event":"\#(event.rawValue)","job":\#(job),"attempt":\#(attempt),"worker":\#(id),"pid":\#(pid),"at":\#(at),"monotonic_ns":\#(monotonic)"#
        if let outcome { line += #","outcome":"\#(outcome)""# }
        line += "}\n"
        let (descriptor, bytes) = (descriptor, line)
        queue.async {
            _ = bytes.utf8CString.withUnsafeBufferPointer { write(descriptor, $0.baseAddress, $0.count - 1) }
        }
    }

    /// Writes what was recorded and closes the file.
    func close() async {
        let descriptor = descriptor
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            queue.async {
                Glibc.close(descriptor)
                done.resume()
            }
        }
    }
}

/// A job log that cannot be opened.
public struct JobLogError: Error, CustomStringConvertible, Sendable {
    /// The file that could not be opened.
    public let path: String
    /// The system's reason (`strerror`).
    public let reason: String
    public var description: String { "cannot open the job log \(path): \(reason)" }
}
