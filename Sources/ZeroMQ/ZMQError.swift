import CZeroMQ
import Glibc

/// An error from libzmq, keeping the failed operation and the `errno` it reported.
///
/// Every libzmq call in this module goes through ``ZMQError/check(_:_:)`` so that the errno is read at once,
/// before any other call can overwrite it.
public struct ZMQError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The libzmq function or operation that failed, for example `zmq_bind`.
    public let operation: String
    /// The `errno` value libzmq reported (`zmq_errno(3)`).
    public let code: Int32
    /// Extra context such as the endpoint or the option name.
    public let detail: String?

    public init(operation: String, code: Int32, detail: String? = nil) {
        self.operation = operation
        self.code = code
        self.detail = detail
    }

    /// The human text libzmq gives for ``code`` (`zmq_strerror(3)`).
    public var message: String { String(cString: zmq_strerror(code)) }

    /// True when the call would have blocked (`EAGAIN`), which non-blocking callers treat as "try later".
    public var isWouldBlock: Bool { code == EAGAIN }

    /// True when the context was terminated under the socket (`ETERM`): the owner should close and stop.
    public var isContextTerminated: Bool { code == ETERM }

    public var description: String {
        var text = "\(operation) failed: \(message) (errno \(code))"
        if let detail { text += " [\(detail)]" }
        return text
    }

    /// Runs a libzmq call that returns `-1` on failure, retrying `EINTR`, and throws the rest with errno kept.
    @discardableResult
    static func check(_ operation: @autoclosure () -> String, detail: String? = nil, _ call: () -> Int32) throws
        -> Int32
    {
        while true {
            let result = call()
            if result != -1 { return result }
            let code = zmq_errno()
            if code == EINTR { continue }
            throw ZMQError(operation: operation(), code: code, detail: detail)
        }
    }
}
