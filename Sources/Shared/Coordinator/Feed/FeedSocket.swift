import Foundation
import Logging
import ZeroMQ

/// The change feed's XPUB socket, bound, with the topics its subscribers follow, before a socket loop takes it: the
/// router's loop runs it beside the ROUTER (``RouterIO``), so a commit answered on the router's thread is published
/// from that thread too, waking no other.
struct FeedSocket {
    /// The endpoint actually bound (a `*` port resolved).
    let endpoint: String
    /// The topics followed, as the socket reports them (recorded on the loop's thread).
    let subscriptions = FeedSubscriptions()
    private let socket: ZMQSocket

    /// Binds the XPUB socket (with CURVE when configured).
    /// - Throws: ``ZMQError`` when the endpoint cannot be bound.
    init(configuration: CoordinatorConfiguration, context: ZMQContext) throws {
        let publisher = try context.makeSocket(.xpub)
        if let curve = configuration.curve {
            try publisher.setCurveServer(secretKey: curve.secretKey)
            try publisher.setZAPDomain("tributary")
        }
        // A subscriber that stops reading costs at most this many queued messages; then XPUB drops for it alone.
        try publisher.setSendHighWaterMark(configuration.feedBuffer)
        endpoint = try publisher.bind(configuration.feed)
        socket = publisher
    }

    /// The socket as a loop's member: XPUB rather than PUB, so it reads which topics subscribers ask for.
    var member: SocketLoop.Member {
        let subscriptions = subscriptions
        return .init(socket, receives: true, consume: { subscriptions.record($0) })
    }

    /// Closes the socket when no loop took it (the start failed before).
    func close() { socket.close() }
}
