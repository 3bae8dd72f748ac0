import CZeroMQ

/// A libzmq context (`zmq_ctx_new(3)`): the container of I/O threads that every socket is created from.
///
/// A context is thread-safe, so this class is `Sendable`: any thread may create sockets from it. Terminate it
/// only after every socket made from it is closed; ``terminate()`` blocks until then (`zmq_ctx_term(3)`).
public final class ZMQContext: @unchecked Sendable {
    // @unchecked: libzmq documents contexts as thread-safe; the only mutable state is the handle, which is
    // written once in init and nulled in terminate under a lock.
    private let lock = Lock()
    private var handle: UnsafeMutableRawPointer?

    /// Creates a context with libzmq's defaults (one I/O thread).
    public init() throws {
        guard let handle = zmq_ctx_new() else {
            throw ZMQError(operation: "zmq_ctx_new", code: zmq_errno())
        }
        self.handle = handle
    }

    /// The raw context pointer, for sockets created from it.
    var unsafeHandle: UnsafeMutableRawPointer {
        lock.withLock {
            guard let handle else { preconditionFailure("ZMQContext used after terminate()") }
            return handle
        }
    }

    /// Creates a socket of the given type owned by the calling thread (`zmq_socket(3)`).
    public func makeSocket(_ type: ZMQSocketType) throws -> ZMQSocket {
        try ZMQSocket(context: self, type: type)
    }

    /// Terminates the context (`zmq_ctx_term(3)`), blocking until every socket made from it is closed.
    /// Calling it twice is harmless.
    public func terminate() {
        let handle = lock.withLock { () -> UnsafeMutableRawPointer? in
            defer { self.handle = nil }
            return self.handle
        }
        guard let handle else { return }
        _ = try? ZMQError.check("zmq_ctx_term") { zmq_ctx_term(handle) }
    }

    deinit { terminate() }

}
