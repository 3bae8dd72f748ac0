import Dispatch

/// Runs a blocking call (SQLite through GRDB's synchronous API, `zmq_poll`, a semaphore) on a Dispatch queue of
/// its own and awaits it, so that no thread of Swift's cooperative pool waits on I/O or on another thread.
enum BlockingWork {
    private static let queue = DispatchQueue(label: "tributary.blocking", attributes: .concurrent)

    /// The value `work` returns, or the error it throws, computed off the cooperative pool.
    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Runs `work`, which cannot fail, off the cooperative pool.
    static func run(_ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { continuation in
            queue.async {
                work()
                continuation.resume()
            }
        }
    }
}
