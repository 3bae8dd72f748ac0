import CZeroMQ
import Foundation

/// One libzmq socket (`zmq_socket(3)`). Not thread-safe: a socket has one owning thread at a time.
///
/// A socket may be handed to another thread once (for example to a ``SocketLoop``) as long as the hand-over is a
/// full memory barrier, which starting a thread is. It is closed on ``close()`` or deinit, with the linger set by
/// ``setLinger(milliseconds:)`` (`zmq_close(3)`).
public final class ZMQSocket {
    /// The socket pattern.
    public let type: ZMQSocketType
    private var handle: UnsafeMutableRawPointer?
    // Keeps the context alive for as long as the socket exists: libzmq requires sockets to close first.
    private let context: ZMQContext

    init(context: ZMQContext, type: ZMQSocketType) throws {
        guard let handle = zmq_socket(context.unsafeHandle, type.rawValue) else {
            throw ZMQError(operation: "zmq_socket", code: zmq_errno(), detail: type.description)
        }
        self.context = context
        self.type = type
        self.handle = handle
        do {
            // A closed socket must never block process exit for ever; callers raise it where delivery matters.
            try setLinger(milliseconds: 0)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// The raw socket pointer; valid until ``close()``.
    var unsafeHandle: UnsafeMutableRawPointer {
        guard let handle else { preconditionFailure("ZMQSocket used after close()") }
        return handle
    }

    /// Closes the socket (`zmq_close(3)`); pending outgoing messages are kept for the linger period.
    public func close() {
        guard let handle else { return }
        zmq_close(handle)
        self.handle = nil
    }

    // MARK: - Endpoints

    /// Binds to an endpoint such as `tcp://127.0.0.1:7400` or `tcp://127.0.0.1:*` (`zmq_bind(3)`).
    /// - Returns: the endpoint actually bound, with the port a wildcard resolved to.
    @discardableResult
    public func bind(_ endpoint: String) throws -> String {
        try ZMQError.check("zmq_bind", detail: endpoint) { zmq_bind(unsafeHandle, endpoint) }
        return try lastEndpoint()
    }

    /// Connects to an endpoint (`zmq_connect(3)`); the connection is made, and remade, in the background.
    public func connect(_ endpoint: String) throws {
        try ZMQError.check("zmq_connect", detail: endpoint) { zmq_connect(unsafeHandle, endpoint) }
    }

    /// Connects to each endpoint of a comma-separated list (`tcp://a:7401,tcp://b:7401`): the feed endpoints of a
    /// cluster's members, of which only the primary binds, so that a SUB socket receives from whichever serves. With
    /// more than one, messages are queued only to completed connections (``setImmediate(_:)``), and each member is
    /// tried again every half second, without the backoff of a single endpoint: a standby that takes over is found
    /// within that.
    public func connect(toEach list: String) throws {
        let endpoints = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if endpoints.count > 1 {
            try setImmediate(true)
            try setReconnectInterval(initial: 500, maximum: 0)
        }
        for endpoint in endpoints { try connect(endpoint) }
    }

    /// The last endpoint bound (`ZMQ_LAST_ENDPOINT`).
    public func lastEndpoint() throws -> String {
        var buffer = [CChar](repeating: 0, count: 512)
        var size = buffer.count
        try ZMQError.check("zmq_getsockopt", detail: "ZMQ_LAST_ENDPOINT") {
            zmq_getsockopt(unsafeHandle, ZMQ_LAST_ENDPOINT, &buffer, &size)
        }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map(UInt8.init(bitPattern:)), as: UTF8.self)
    }

    // MARK: - Sending and receiving

    /// Sends a multipart message (`zmq_send(3)`); each frame is copied by libzmq.
    /// - Parameter dontWait: fail with `EAGAIN` instead of blocking when the high-water mark is reached.
    public func send(_ frames: [Data], dontWait: Bool = false) throws {
        precondition(!frames.isEmpty, "a ZeroMQ message has at least one frame")
        for (index, frame) in frames.enumerated() {
            var flags: Int32 = dontWait ? ZMQ_DONTWAIT : 0
            if index < frames.count - 1 { flags |= ZMQ_SNDMORE }
            _ = try frame.withUnsafeBytes { buffer in
                try ZMQError.check("zmq_send") { zmq_send(unsafeHandle, buffer.baseAddress, buffer.count, flags) }
            }
        }
    }

    /// Receives one multipart message (`zmq_msg_recv(3)`), copying every frame out at once.
    /// - Parameter dontWait: return `nil` instead of blocking when nothing is waiting.
    public func receive(dontWait: Bool = false) throws -> [Data]? {
        try receiveMessage(dontWait: dontWait, readingUserID: false)?.frames
    }

    /// Receives one multipart message with the `User-Id` the ZAP handler gave its peer when it was admitted
    /// (`zmq_msg_gets(3)`), nil without authentication.
    public func receiveMessage(dontWait: Bool = false, readingUserID: Bool) throws -> (frames: [Data], userID: String?)?
    {
        var frames: [Data] = []
        var userID: String?
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        repeat {
            do {
                try ZMQError.check("zmq_msg_recv") {
                    zmq_msg_recv(&message, unsafeHandle, dontWait && frames.isEmpty ? ZMQ_DONTWAIT : 0)
                }
            } catch let error as ZMQError where error.isWouldBlock && frames.isEmpty {
                return nil
            }
            // A ROUTER's routing-id frame is made locally and carries no metadata: ask each frame until one has it.
            if readingUserID && userID == nil, let property = zmq_msg_gets(&message, "User-Id") {
                userID = String(cString: property)
            }
            let size = zmq_msg_size(&message)
            frames.append(size == 0 ? Data() : Data(bytes: zmq_msg_data(&message), count: size))
        } while zmq_msg_more(&message) != 0
        return (frames, userID)
    }

    // MARK: - Polling

    /// Waits until the socket is readable or the timeout passes (`zmq_poll(3)`).
    /// - Parameter milliseconds: the longest wait; `-1` waits for ever.
    /// - Returns: true if a message can be received without blocking.
    public func waitForInput(milliseconds: Int) throws -> Bool {
        var item = zmq_pollitem_t(socket: unsafeHandle, fd: -1, events: Int16(ZMQ_POLLIN), revents: 0)
        let ready = try ZMQError.check("zmq_poll") { zmq_poll(&item, 1, milliseconds) }
        return ready > 0
    }
}
