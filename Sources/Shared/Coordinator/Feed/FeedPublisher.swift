import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TributaryCore
import TributaryProtocol
import ZeroMQ

/// The change feed as a `Service`: the only owner of the XPUB socket (on a socket loop of its own), of the
/// topics its subscribers follow, and of the last sequence number published.
///
/// The server hands it each commit's didSave parts (``publish(_:)``) and jobs' progress; it publishes a
/// heartbeat carrying the last sequence number every ``CoordinatorConfiguration/feedHeartbeatInterval``. A
/// commit's messages and its update of the last sequence number go into the loop's outbox under one lock, which
/// heartbeats take too, so a heartbeat never overtakes a commit it counts.
///
/// ```swift
/// let publisher = try FeedPublisher(configuration: configuration, context: .shared(), logger: logger)
/// publisher.publish(events)  // after the commit is durable
/// ```
public final class FeedPublisher: Service, Sendable {
    /// The endpoint actually bound (a `*` port resolved).
    public let endpoint: String
    private let loop: SocketLoop
    private let subscriptions: FeedSubscriptions
    private let heartbeatInterval: Duration
    /// The last commit published (its sequence number and epoch); its lock also orders a commit's messages against
    /// heartbeats.
    private let last = Mutex<FeedPosition>(FeedPosition(seq: 0))

    static let commitsTopic = Data(Wire.commitsTopic.utf8)
    static let jobsTopic = Data(Wire.jobsTopic.utf8)
    static let heartbeatTopic = Data(Wire.heartbeatTopic.utf8)

    /// Binds the XPUB socket (with CURVE when configured); ``run()`` starts publishing heartbeats.
    /// - Throws: ``ZMQError`` when the endpoint cannot be bound.
    public init(configuration: CoordinatorConfiguration, context: ZMQContext, logger: Logger) throws {
        let publisher = try context.makeSocket(.xpub)
        if let curve = configuration.curve {
            try publisher.setCurveServer(secretKey: curve.secretKey)
            try publisher.setZAPDomain("tributary")
        }
        // A subscriber that stops reading costs at most this many queued messages; then XPUB drops for it alone.
        try publisher.setSendHighWaterMark(configuration.feedBuffer)
        endpoint = try publisher.bind(configuration.feed)
        let subscriptions = FeedSubscriptions()
        self.subscriptions = subscriptions
        heartbeatInterval = configuration.feedHeartbeatInterval
        // XPUB rather than PUB: the same feed to subscribers, and it tells which topics they asked for.
        loop = try SocketLoop(
            name: "tributary-feed",
            sockets: [.init(publisher, receives: true, consume: { subscriptions.record($0) })],
            onSendFailure: { error, _ in logger.debug("feed message not sent: \(error)") })
    }

    /// Starts from the store's last commit (before any commit is published).
    public func start(at position: FeedPosition) {
        last.withLock { $0 = position }
        loop.start()
    }

    /// Publishes a heartbeat every interval until graceful shutdown (or cancellation), then sends what is queued
    /// and closes the socket. In the coordinator's service group it shuts down after the router, whose last
    /// commits it publishes.
    public func run() async throws {
        let interval = heartbeatInterval
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                self.publishHeartbeat()
                try await Task.sleep(for: interval)
            }
        }
        await stop()
    }

    /// Sends what is queued and closes the socket: after the last commit was handed over (or when the server
    /// could not start). Later messages are dropped.
    public func stop() async {
        await loop.stop()
    }

    /// Whether some subscriber follows `topic` (nothing is built for a topic nobody gets).
    func wants(_ topic: Data) -> Bool { subscriptions.wants(topic) }

    /// Publishes a commit's didSave parts, one message per entity (topic = entity name), then its summary on
    /// `$commits`.
    func publish(_ events: CommitEvents) {
        let commitsWanted = subscriptions.wants(Self.commitsTopic)
        last.withLock { last in
            if events.seq > last.seq { last = FeedPosition(seq: events.seq, epoch: events.epoch) }
            for part in events.parts {
                let topic = Data(part.entity.utf8)
                if subscriptions.wants(topic) { loop.send([topic, part.body], on: 0) }
            }
            if commitsWanted { loop.send([Self.commitsTopic, events.summary], on: 0) }
        }
    }

    /// Publishes a job's progress and state on the `$jobs` topic, when some subscriber follows it.
    func publish(_ progress: JobProgress) {
        guard subscriptions.wants(Self.jobsTopic), let body = try? progress.wire.serializedData() else { return }
        loop.send([Self.jobsTopic, body], on: 0)
    }

    /// Publishes the last sequence number on `$heartbeat`, so subscribers know they are connected and can tell
    /// whether they missed anything.
    private func publishHeartbeat() {
        last.withLock { last in
            let heartbeat = Tributary_V1_FeedHeartbeat.with {
                $0.lastSeq = last.seq
                $0.epoch = last.epoch
                $0.at = Date().timeIntervalSince1970
            }
            guard let body = try? heartbeat.serializedData() else { return }
            loop.send([Self.heartbeatTopic, body], on: 0)
        }
    }
}
