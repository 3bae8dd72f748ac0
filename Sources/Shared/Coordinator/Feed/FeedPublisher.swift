import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TributaryCore
import TributaryProtocol
import ZeroMQ

/// The change feed as a `Service`: the owner of the topics its subscribers follow and of the last sequence number
/// published. Its XPUB socket (`FeedSocket`) runs on the router's socket loop, so a commit answered on the router's
/// thread is published from it at once, without waking a thread of the feed's own.
///
/// The server hands it each commit's didSave parts (`publish(_:)`) and jobs' progress; it publishes a
/// heartbeat carrying the last sequence number every ``CoordinatorConfiguration/feedHeartbeatInterval``. A
/// commit's messages and its update of the last sequence number go into the loop's outbox under one lock, which
/// heartbeats take too, so a heartbeat never overtakes a commit it counts.
///
/// ```swift
/// let feed = try FeedSocket(configuration: configuration, context: .shared())
/// let io = try RouterIO(configuration: configuration, context: .shared(), feed: feed, activity: activity, logger: logger)
/// let publisher = FeedPublisher(feed, loop: io.loop, socket: RouterIO.feedSocket, configuration: configuration)
/// publisher.publish(events)  // after the commit is durable
/// ```
public final class FeedPublisher: Service, Sendable {
    /// The endpoint actually bound (a `*` port resolved).
    public let endpoint: String
    /// The loop that owns the XPUB socket (the router's), and the socket's index on it.
    private let loop: SocketLoop
    private let socket: SocketLoop.SocketIndex
    private let subscriptions: FeedSubscriptions
    private let heartbeatInterval: Duration
    /// The last commit published (its sequence number and epoch); its lock also orders a commit's messages against
    /// heartbeats.
    private let last = Mutex<FeedPosition>(FeedPosition(seq: 0))

    static let commitsTopic = Data(Wire.commitsTopic.utf8)
    static let jobsTopic = Data(Wire.jobsTopic.utf8)
    static let heartbeatTopic = Data(Wire.heartbeatTopic.utf8)

    /// Publishes on `feed`, which `loop` runs as its socket `socket`; nothing is sent before the loop starts.
    init(
        _ feed: FeedSocket, loop: SocketLoop, socket: SocketLoop.SocketIndex, configuration: CoordinatorConfiguration
    ) {
        endpoint = feed.endpoint
        subscriptions = feed.subscriptions
        self.loop = loop
        self.socket = socket
        heartbeatInterval = configuration.feedHeartbeatInterval
    }

    /// Starts from the store's last commit (before any commit is published).
    public func start(at position: FeedPosition) {
        last.withLock { $0 = position }
    }

    /// Publishes a heartbeat every interval until graceful shutdown (or cancellation). The socket is closed with
    /// the router's loop, by the router once it has answered and published its last commits: in the coordinator's
    /// service group the publisher shuts down after the router, and on cancellation it does not cut the router's
    /// last replies short.
    public func run() async throws {
        let interval = heartbeatInterval
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                self.publishHeartbeat()
                try await Task.sleep(for: interval)
            }
        }
    }

    /// Sends what is queued and closes the socket, stopping the loop it shares with the router: for a coordinator
    /// whose router never ran (its start failed). Later messages are dropped.
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
                if subscriptions.wants(topic) { loop.send([topic, part.body], on: socket) }
            }
            if commitsWanted { loop.send([Self.commitsTopic, events.summary], on: socket) }
        }
    }

    /// Publishes a job's progress and state on the `$jobs` topic, when some subscriber follows it.
    func publish(_ progress: JobProgress) {
        guard subscriptions.wants(Self.jobsTopic), let body = try? progress.wire.serializedData() else { return }
        loop.send([Self.jobsTopic, body], on: socket)
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
            loop.send([Self.heartbeatTopic, body], on: socket)
        }
    }
}
