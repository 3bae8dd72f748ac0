import CZeroMQ
import Foundation

/// libzmq's built-in proxy (`zmq_proxy_steerable(3)`): moves every message from one socket to the other in both
/// directions, inside libzmq, until told to stop. With an XSUB frontend and an XPUB backend it is a feed forwarder:
/// messages flow down, subscriptions flow up, so the upstream publisher still builds only what someone downstream
/// subscribed to.
public enum ZMQProxy {
    /// Runs the proxy on the calling thread until a `TERMINATE` arrives on `control` (see ``terminate(_:)``); blocks,
    /// so call it from a thread of its own. The sockets stay owned by that thread throughout.
    public static func run(frontend: ZMQSocket, backend: ZMQSocket, control: ZMQSocket) throws {
        try ZMQError.check("zmq_proxy_steerable") {
            zmq_proxy_steerable(frontend.unsafeHandle, backend.unsafeHandle, nil, control.unsafeHandle)
        }
    }

    /// Tells a proxy to stop: `steering` is a PAIR connected to the PAIR the proxy was given as `control`. Does not
    /// wait: a proxy that already stopped (its control socket closed) leaves nothing to tell.
    public static func terminate(_ steering: ZMQSocket) {
        try? steering.send([Data("TERMINATE".utf8)], dontWait: true)
    }
}

extension ZMQSocket {
    /// Waits until any of `sockets` is readable or the timeout passes (`zmq_poll(3)`).
    /// - Parameter milliseconds: the longest wait; `-1` waits for ever.
    /// - Returns: for each socket, whether a message can be received without blocking.
    public static func waitForInput(_ sockets: [ZMQSocket], milliseconds: Int) throws -> [Bool] {
        var items = sockets.map {
            zmq_pollitem_t(socket: $0.unsafeHandle, fd: -1, events: Int16(ZMQ_POLLIN), revents: 0)
        }
        _ = try ZMQError.check("zmq_poll") { zmq_poll(&items, Int32(items.count), milliseconds) }
        return items.map { $0.revents & Int16(ZMQ_POLLIN) != 0 }
    }
}
