import CZeroMQ
import Foundation

/// The socket options Tributary sets (`zmq_setsockopt(3)`).
extension ZMQSocket {
    /// How long unsent messages are kept after ``close()`` (`ZMQ_LINGER`); `-1` for ever, `0` dropped at once.
    public func setLinger(milliseconds: Int32) throws {
        try setOption(ZMQ_LINGER, name: "ZMQ_LINGER", int32: milliseconds)
    }

    /// Queue messages only to completed connections (`ZMQ_IMMEDIATE`): with several connected endpoints, nothing is
    /// queued for one that is not there.
    public func setImmediate(_ enabled: Bool) throws {
        try setOption(ZMQ_IMMEDIATE, name: "ZMQ_IMMEDIATE", int32: enabled ? 1 : 0)
    }

    /// The send high-water mark in messages (`ZMQ_SNDHWM`); `0` means no limit.
    public func setSendHighWaterMark(_ messages: Int32) throws {
        try setOption(ZMQ_SNDHWM, name: "ZMQ_SNDHWM", int32: messages)
    }

    /// The receive high-water mark in messages (`ZMQ_RCVHWM`); `0` means no limit.
    public func setReceiveHighWaterMark(_ messages: Int32) throws {
        try setOption(ZMQ_RCVHWM, name: "ZMQ_RCVHWM", int32: messages)
    }

    /// The largest inbound message accepted (`ZMQ_MAXMSGSIZE`); a peer that sends more is disconnected by libzmq.
    public func setMaximumMessageSize(_ bytes: Int64) throws {
        var value = bytes
        try ZMQError.check("zmq_setsockopt", detail: "ZMQ_MAXMSGSIZE") {
            zmq_setsockopt(unsafeHandle, ZMQ_MAXMSGSIZE, &value, MemoryLayout<Int64>.size)
        }
    }

    /// The identity a DEALER presents to a ROUTER (`ZMQ_ROUTING_ID`); set before connecting.
    public func setRoutingID(_ identity: Data) throws {
        try setOption(ZMQ_ROUTING_ID, name: "ZMQ_ROUTING_ID", bytes: identity)
    }

    /// Makes a ROUTER report unroutable messages as `EHOSTUNREACH` instead of dropping them
    /// (`ZMQ_ROUTER_MANDATORY`).
    public func setRouterMandatory(_ enabled: Bool) throws {
        try setOption(ZMQ_ROUTER_MANDATORY, name: "ZMQ_ROUTER_MANDATORY", int32: enabled ? 1 : 0)
    }

    /// Lets a reconnecting peer with the same routing id take over the old connection (`ZMQ_ROUTER_HANDOVER`).
    public func setRouterHandover(_ enabled: Bool) throws {
        try setOption(ZMQ_ROUTER_HANDOVER, name: "ZMQ_ROUTER_HANDOVER", int32: enabled ? 1 : 0)
    }

    /// Reconnect backoff (`ZMQ_RECONNECT_IVL`, `ZMQ_RECONNECT_IVL_MAX`): starts at `initial` and doubles to
    /// `maximum` milliseconds.
    public func setReconnectInterval(initial: Int32, maximum: Int32) throws {
        try setOption(ZMQ_RECONNECT_IVL, name: "ZMQ_RECONNECT_IVL", int32: initial)
        try setOption(ZMQ_RECONNECT_IVL_MAX, name: "ZMQ_RECONNECT_IVL_MAX", int32: maximum)
    }

    /// Subscribes a SUB socket to messages whose first frame starts with `prefix` (`ZMQ_SUBSCRIBE`);
    /// the empty prefix subscribes to everything.
    public func subscribe(_ prefix: Data) throws {
        try setOption(ZMQ_SUBSCRIBE, name: "ZMQ_SUBSCRIBE", bytes: prefix)
    }

    /// Subscribes to a topic given as text.
    public func subscribe(_ prefix: String) throws {
        try subscribe(Data(prefix.utf8))
    }

    // MARK: - CURVE and ZAP

    /// Makes the socket a CURVE server with this secret key (40 Z85 characters): peers must know its public key.
    public func setCurveServer(secretKey: String) throws {
        try setOption(ZMQ_CURVE_SERVER, name: "ZMQ_CURVE_SERVER", int32: 1)
        try setOption(ZMQ_CURVE_SECRETKEY, name: "ZMQ_CURVE_SECRETKEY", bytes: Data(secretKey.utf8))
    }

    /// Makes the socket a CURVE client with its key pair, talking only to the server with `serverKey`.
    public func setCurveClient(publicKey: String, secretKey: String, serverKey: String) throws {
        try setOption(ZMQ_CURVE_SERVERKEY, name: "ZMQ_CURVE_SERVERKEY", bytes: Data(serverKey.utf8))
        try setOption(ZMQ_CURVE_PUBLICKEY, name: "ZMQ_CURVE_PUBLICKEY", bytes: Data(publicKey.utf8))
        try setOption(ZMQ_CURVE_SECRETKEY, name: "ZMQ_CURVE_SECRETKEY", bytes: Data(secretKey.utf8))
    }

    /// The ZAP domain: a server socket with one asks the ZAP handler about every peer (`ZMQ_ZAP_DOMAIN`).
    public func setZAPDomain(_ domain: String) throws {
        try setOption(ZMQ_ZAP_DOMAIN, name: "ZMQ_ZAP_DOMAIN", bytes: Data(domain.utf8))
    }

    /// How long a blocking receive waits before failing with `EAGAIN` (`ZMQ_RCVTIMEO`).
    public func setReceiveTimeout(milliseconds: Int32) throws {
        try setOption(ZMQ_RCVTIMEO, name: "ZMQ_RCVTIMEO", int32: milliseconds)
    }

    // MARK: - Raw setters

    private func setOption(_ option: Int32, name: String, int32 value: Int32) throws {
        var value = value
        try ZMQError.check("zmq_setsockopt", detail: name) {
            zmq_setsockopt(unsafeHandle, option, &value, MemoryLayout<Int32>.size)
        }
    }

    private func setOption(_ option: Int32, name: String, bytes: Data) throws {
        _ = try bytes.withUnsafeBytes { buffer in
            try ZMQError.check("zmq_setsockopt", detail: name) {
                zmq_setsockopt(unsafeHandle, option, buffer.baseAddress, buffer.count)
            }
        }
    }
}
