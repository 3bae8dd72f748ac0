import Foundation
import Logging
import TributaryProtocol
import ZeroMQ

/// What the router reads and sends: its ROUTER socket's loop (messages in, replies out; the feed's XPUB runs on it
/// too), its mailbox of events, the requests made inside the process, and the peers that read batched replies.
///
/// Sendable and shared: the router sends through it from its actor, the reader pool from its threads, the writer
/// posts to its mailbox; the socket itself belongs to the loop's thread.
final class RouterIO: Sendable {
    /// The index of the ROUTER among the loop's sockets.
    static let routerSocket = 0
    /// The index of the feed's XPUB among the loop's sockets (``FeedPublisher`` sends on it).
    static let feedSocket = 1
    /// Messages libzmq holds for each peer (`ZMQ_RCVHWM`) while the router does not read: beside the loop's own
    /// bound (``inboundByteLimit``), what a peer can make the coordinator hold is this many of its messages.
    static let receiveHighWaterMark: Int32 = 1_000
    /// The bytes of messages received and not yet taken by the router past which the loop stops reading them (the
    /// message that crosses it is kept, so a message of the largest size still passes).
    static let inboundByteLimit = 16 << 20

    /// The endpoint actually bound (a `*` port resolved).
    let listenEndpoint: String
    /// The socket's loop: its ``SocketLoop/inbound`` is what the router's loop waits on.
    let loop: SocketLoop
    /// Events posted to the router from any thread, waking it through ``loop``'s inbound queue.
    let mailbox: RouterMailbox
    /// Workers that read several envelopes in one message: what is queued for them is sent packed.
    let packingPeers = PackingPeers()

    /// Binds the jobs/control ROUTER at `configuration.listen`, with CURVE when configured, and takes the feed's
    /// bound socket onto the same loop; nothing is read or sent before ``SocketLoop/start()``.
    /// - Parameter activity: told of each peer as its messages arrive, on the loop's thread.
    /// - Throws: ``ZMQError`` when the endpoint cannot be bound (for example, the port is taken).
    init(
        configuration: CoordinatorConfiguration, context: ZMQContext, feed: FeedSocket, activity: PeerActivity,
        logger: Logger
    ) throws {
        let router = try context.makeSocket(.router)
        if let curve = configuration.curve {
            try router.setCurveServer(secretKey: curve.secretKey)
            try router.setZAPDomain("tributary")
        }
        try router.setMaximumMessageSize(configuration.limits.maximumMessageBytes)
        try router.setRouterMandatory(true)
        try router.setRouterHandover(true)
        try router.setSendHighWaterMark(100_000)
        // What waits in libzmq for each peer while the router is behind (the loop stops reading at
        // ``inboundByteLimit``): a peer past it is held back by TCP, and its own client queues what it sends.
        try router.setReceiveHighWaterMark(Self.receiveHighWaterMark)
        listenEndpoint = try router.bind(configuration.listen)
        let packingPeers = self.packingPeers
        loop = try SocketLoop(
            name: "tributary-coordinator",
            sockets: [
                .init(
                    router, receives: true, readsUserID: configuration.curve != nil,
                    coalesce: { packingPeers.coalesce($0) }),
                feed.member,
            ],
            inboundByteLimit: Self.inboundByteLimit,
            onSendFailure: { error, socket in
                if socket == Self.feedSocket {
                    logger.debug("feed message not sent: \(error)")
                } else {
                    // A peer that went away (EHOSTUNREACH) before its reply: nothing to deliver it to.
                    logger.debug("message not delivered on socket \(socket): \(error)")
                }
            },
            onReceive: { socket, frames in
                if socket == Self.routerSocket, let peer = frames.first { activity.heard(peer) }
            })
        mailbox = RouterMailbox(waking: loop.inbound)
    }

    /// Sends `body` to `peer`, counting a refusal.
    func reply(to peer: Data, requestID: UInt64, _ body: Tributary_V1_Envelope.OneOf_Body) {
        if case .error(let error) = body { WriterMetrics.refused(ProtocolError.name(of: error.code)) }
        loop.send([peer] + Wire.frames(Wire.envelope(requestID, body)), on: Self.routerSocket)
    }

    /// Sends gathered replies, packed for the peers that read batches.
    func send(_ batch: ReplyPack) {
        let packingPeers = self.packingPeers
        for message in batch.messages(batching: { packingPeers.contains($0) }) {
            loop.send(message, on: Self.routerSocket)
        }
    }

    /// Posts an event to the router's mailbox and wakes its loop.
    func post(_ event: RouterEvent) {
        mailbox.post(event)
    }
}
