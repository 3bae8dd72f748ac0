import Foundation
import Synchronization
import TributaryCore

/// An exclusive `flock(2)` on `<store>.lock`, held while a ``RootStore`` is open, so that two coordinators can
/// never both be the writer of one store (each would re-queue the other's running jobs).
final class StoreLock: Sendable {
    private let fileDescriptor: Mutex<Int32?>

    /// Takes the lock or throws, naming the store, if another process holds it.
    init(store path: String) throws {
        let lockPath = path + ".lock"
        let fd = open(lockPath, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw StoreError(.sqlite, "cannot create the lock file \(lockPath): \(String(cString: strerror(errno)))")
        }
        guard Self.lock(fd) else {
            Foundation.close(fd)
            throw StoreError(.locked, "another process (a tributary-coordinator?) is using the store \(path)")
        }
        fileDescriptor = Mutex(fd)
    }

    /// Takes the lock, trying again for up to ``settleTime``: a lock this process released a moment ago can still be
    /// held by a child it is starting (between its fork and its exec the child shares the open lock file, whose
    /// descriptor closes at the exec), so a store closed and opened again at once could be refused while another
    /// thread starts a process. Another process that holds the lock holds it for longer.
    private static func lock(_ fd: Int32) -> Bool {
        let deadline = ContinuousClock.now + settleTime
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK, ContinuousClock.now < deadline else { return false }
            usleep(5_000)
        }
        return true
    }

    /// How long a held lock is tried again before the store is refused.
    static let settleTime: Duration = .milliseconds(500)

    /// Releases the lock (closing the file releases the `flock`); harmless when already released.
    func release() {
        if let fd = fileDescriptor.withLock({ descriptor in
            defer { descriptor = nil }; return descriptor
        }) {
            Foundation.close(fd)
        }
    }

    deinit { release() }
}
