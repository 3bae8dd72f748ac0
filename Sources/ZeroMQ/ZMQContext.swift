import CZeroMQ
import Foundation

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

    // MARK: - The process's context

    private static let sharedLock = Lock()
    nonisolated(unsafe) private static var sharedContext: ZMQContext?
    // nonisolated(unsafe): read and written only under `sharedLock`.

    /// The process's context, made on first use: ZeroMQ's advice is one context per process, whose I/O thread
    /// serves every socket. Tributary's connections, feeds and the coordinator use it unless given another.
    /// - Throws: ``ZMQError`` when libzmq cannot make a context (out of file descriptors).
    public static func shared() throws -> ZMQContext {
        try sharedLock.withLock {
            if let sharedContext { return sharedContext }
            let context = try ZMQContext()
            sharedContext = context
            return context
        }
    }

    /// Terminates the process's context, if one was made, at the end of `main`: messages still queued on
    /// sockets closed with a linger are sent (up to their linger) before it returns, and a socket loop still
    /// running is woken (`ETERM`) and closes its sockets. A later ``shared()`` makes a new context.
    ///
    /// `zmq_ctx_term(3)` blocks, so it runs on a thread of its own, never on the cooperative pool.
    public static func terminateShared() async {
        let context = sharedLock.withLock {
            defer { sharedContext = nil }
            return sharedContext
        }
        guard let context else { return }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                context.terminate()
                done.resume()
            }
            thread.name = "tributary-zmq-term"
            thread.start()
        }
    }

}
