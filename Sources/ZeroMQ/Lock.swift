import Synchronization

/// A small mutex for the few pieces of state this module shares between threads.
final class Lock: Sendable {
    private let mutex = Mutex<Void>(())

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        try mutex.withLock { _ in try body() }
    }
}
