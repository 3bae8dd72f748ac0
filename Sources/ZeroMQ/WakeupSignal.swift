import CZeroMQ
import Glibc

/// A Linux `eventfd(2)` that any thread can raise to wake a ``SocketLoop`` out of `zmq_poll`.
///
/// `zmq_poll(3)` accepts plain file descriptors beside sockets, so raising the signal is a thread-safe,
/// allocation-free way to tell the loop thread that work is waiting in its outbox.
final class WakeupSignal: Sendable {
    let fileDescriptor: Int32

    init() throws {
        let fd = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard fd >= 0 else { throw ZMQError(operation: "eventfd", code: errno) }
        fileDescriptor = fd
    }

    deinit { Glibc.close(fileDescriptor) }

    /// Raises the signal; cheap and safe from any thread.
    func raise() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(fileDescriptor, $0.baseAddress, 8) }
    }

    /// Clears the signal; called by the loop thread after it woke.
    func clear() {
        var value: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &value) { Glibc.read(fileDescriptor, $0.baseAddress, 8) }
    }
}
