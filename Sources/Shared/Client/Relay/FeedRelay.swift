import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TributaryMessaging
import TributaryProtocol
import ZeroMQ

/// Where a relay connects and what it serves.
public struct FeedRelayConfiguration: Sendable {
    /// The coordinator's feed (its XPUB), or another relay's, or a cluster's members' comma-separated: only the
    /// primary binds its feed, so the relay receives from whichever serves.
    public var upstreamFeed: String
    /// The coordinator's jobs/control endpoint (its ROUTER), or another relay's, or a cluster's members'
    /// comma-separated (requests follow the primary): where requests are forwarded.
    public var upstreamListen: String
    /// Where subscribers connect for the feed: the relay's XPUB; a `*` port binds a free one.
    public var feed: String
    /// Where subscribers send their feed requests: the relay's ROUTER; a `*` port binds a free one.
    public var listen: String
    /// The relay's keys as a subscriber of a coordinator with CURVE.
    public var curve: CurveClientKeys?
    /// The most feed messages queued for one downstream subscriber (its XPUB high-water mark).
    public var feedBuffer: Int32 = 1_000

    /// A relay from `upstreamFeed` and `upstreamListen` to `feed` and `listen`, without CURVE keys.
    public init(upstreamFeed: String, upstreamListen: String, feed: String, listen: String) {
        self.upstreamFeed = upstreamFeed
        self.upstreamListen = upstreamListen
        self.feed = feed
        self.listen = listen
    }
}

/// `tributary relay`: subscribes once upstream and serves the feed downstream, for a fleet of subscribers in another
/// data centre. The feed goes through libzmq's own proxy (`zmq_proxy_steerable`) from an XSUB connected upstream to
/// an XPUB bound downstream: messages are forwarded as they are, and subscriptions go up, so the coordinator builds
/// only the topics someone subscribed to, and sends each message once to the relay whatever the number of
/// subscribers behind it. Subscribers' feed requests (history, snapshots, status, durable positions, fetches) are
/// forwarded upstream by `RelayRequestForwarder` with request ids of the relay's own, and the replies routed back.
/// A subscriber behind a relay works as against the coordinator: it follows `$commits`, fills gaps from history.
/// Given a cluster's members, the relay follows the primary on both paths, so its subscribers see a failover as
/// subscribers of the cluster do: the feed resumes from the new primary, whose history fills the gap.
///
/// The proxy blocks in libzmq on a thread of its own, the request path's sockets are polled by loops of their own;
/// ``run()`` waits for graceful shutdown, then stops both and returns once they closed their sockets.
public final class FeedRelay: Service, Sendable {
    /// The feed endpoint bound downstream, with a wildcard port resolved.
    public let feedEndpoint: String
    /// The request endpoint bound downstream, with a wildcard port resolved.
    public let listenEndpoint: String

    private let context: ZMQContext
    private let logger: Logger
    /// The sockets, until ``run()`` hands them to their threads.
    private let sockets: Mutex<Sockets?>
    /// Tells the proxy to stop (a PAIR connected to its control socket); used once, at shutdown.
    private let steering: Mutex<ZMQSocket?>
    private let forwarder: RelayRequestForwarder

    private struct Sockets: @unchecked Sendable {
        // @unchecked: each socket is used by one thread at a time; they move to their threads once, in run().
        let upstreamFeed: ZMQSocket
        let downstreamFeed: ZMQSocket
        let control: ZMQSocket
    }

    /// Connects upstream and binds downstream.
    /// - Throws: `ZMQError` naming an endpoint that cannot be bound or connected.
    public init(configuration: FeedRelayConfiguration, logger: Logger) throws {
        self.logger = logger
        context = try ZMQContext()
        let upstreamFeed = try context.makeSocket(.xsub)
        try configuration.curve?.apply(to: upstreamFeed)
        try upstreamFeed.connect(toEach: configuration.upstreamFeed)
        let downstreamFeed = try context.makeSocket(.xpub)
        try downstreamFeed.setSendHighWaterMark(configuration.feedBuffer)
        feedEndpoint = try downstreamFeed.bind(configuration.feed)
        let controlAddress = "inproc://tributary-relay-control-\(UUID().uuidString)"
        let control = try context.makeSocket(.pair)
        try control.bind(controlAddress)
        let steering = try context.makeSocket(.pair)
        try steering.connect(controlAddress)
        forwarder = try RelayRequestForwarder(
            context: context, upstream: configuration.upstreamListen, curve: configuration.curve,
            downstream: configuration.listen, logger: logger)
        listenEndpoint = forwarder.listenEndpoint
        sockets = Mutex(Sockets(upstreamFeed: upstreamFeed, downstreamFeed: downstreamFeed, control: control))
        self.steering = Mutex(steering)
    }

    public func run() async throws {
        guard
            let sockets = sockets.withLock({ sockets in
                defer { sockets = nil }; return sockets
            })
        else { return }
        let logger = self.logger
        async let proxied: Void = Self.onThread("tributary-relay-feed") {
            do {
                try ZMQProxy.run(
                    frontend: sockets.upstreamFeed, backend: sockets.downstreamFeed, control: sockets.control)
            } catch {
                logger.error("the feed proxy stopped", metadata: ["error": "\(error)"])
            }
            sockets.upstreamFeed.close()
            sockets.downstreamFeed.close()
            sockets.control.close()
        }
        async let forwarded: Void = forwarder.run()
        logger.info("relay serving", metadata: ["feed": "\(feedEndpoint)", "listen": "\(listenEndpoint)"])
        try? await gracefulShutdown()
        steering.withLock { steering in
            if let socket = steering { ZMQProxy.terminate(socket) }
        }
        await forwarder.stop()
        _ = await (proxied, forwarded)
        steering.withLock { steering in
            steering?.close()
            steering = nil
        }
        context.terminate()
    }

    /// Runs `body` on a thread of its own (it blocks in libzmq) and returns when it has.
    private static func onThread(_ name: String, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                body()
                continuation.resume()
            }
            thread.name = name
            thread.start()
        }
    }
}
