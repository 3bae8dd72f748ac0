import Foundation
import TributaryCore
import TributaryMessaging
import TributaryProtocol
import ZeroMQ

/// A subscription to the coordinator's change feed: every commit that passes the filter, exactly once and in
/// sequence order, as an `AsyncSequence` of ``ChangeFeed/Event``s, resumable from any sequence number.
///
/// The feed follows the coordinator's PUB stream and fills what it misses from the stored history (through
/// requests on the jobs endpoint): commits before the subscription started (when resuming with
/// ``Options/since``), and any the stream dropped (a high-water mark reached while this subscriber was slow, a
/// reconnect). Every commit's `$commits` summary tells which parts to expect, so a gap is seen at the next
/// message and never delivered out of order. A commit's ``/TributaryCore/DidSave/position`` (its sequence number
/// and store epoch) is its resume token; with ``Options/durableName`` the coordinator also keeps the position, and
/// keeps the history after it.
///
/// A store whose history was rewritten under the subscriber — a power loss took back commits it had seen, the store
/// was restored from a replica or a backup, and its sequence numbers go on with other commits — is found when the
/// feed resumes or sees the coordinator's next run: the feed throws a ``ChangeFeedError`` whose protocol error is
/// `FEED_REWRITTEN` (naming the first seq that may differ), or, with ``Options/snapshotWhenPruned``, delivers
/// ``Event/rewritten(fromSeq:)`` and a snapshot to start again from.
///
/// ```swift
/// var options = ChangeFeed.Options()
/// options.filter = FeedFilter(entities: ["PullRequest"])
/// options.since = lastProcessed.seq
/// options.sinceEpoch = lastProcessed.epoch
/// let feed = try ChangeFeed(feed: "tcp://127.0.0.1:7401", jobs: "tcp://127.0.0.1:7400", options: options)
/// for try await event in feed {
///     if case .didSave(let save) = event { try process(save); lastProcessed = save.position }
/// }
/// ```
public final class ChangeFeed: AsyncSequence, Sendable {
    /// What the feed delivers.
    public enum Event: Sendable {
        /// One commit: its parts that passed the filter. Commits with none pass silently.
        case didSave(DidSave)
        /// History is delivered up to `seq` and the live stream follows (once at the start; with no
        /// ``Options/since``, when the first live message tells where the store is).
        case caughtUp(seq: UInt64)
        /// A page of the current objects, when the position to resume from was pruned (or rewritten) and
        /// ``Options/snapshotWhenPruned`` is set. The feed goes on after `seq` once `isLast` is true.
        case snapshot(objects: [Tributary_V1_EntityBatch], seq: UInt64, isLast: Bool)
        /// The store's history differs from the one delivered, from `fromSeq` on (a power loss, a restore): what was
        /// delivered from there is not what the store holds. Only with ``Options/snapshotWhenPruned``; the
        /// snapshot that follows replaces what was built from the feed.
        case rewritten(fromSeq: UInt64)
    }

    /// Where and what to follow.
    public struct Options: Sendable {
        /// The entities (and attributes) wanted.
        public var filter = FeedFilter()
        /// Resume after this sequence number: history first, then live. Nil starts with the live stream (or,
        /// with a durable name, at the subscriber's stored position).
        public var since: UInt64?
        /// The epoch of commit ``since`` as it was delivered (``/TributaryCore/DidSave/epoch``): the coordinator
        /// checks that its history is the one followed up to there. 0: not known, not checked (a `since` beyond
        /// the store's last commit is still found).
        public var sinceEpoch: UInt64 = 0
        /// A durable subscriber name: the coordinator stores the position processed so far (acknowledged when the next
        /// event is asked for: at most every second while events flow, and as soon as they pause; and by
        /// ``ChangeFeed/acknowledge()``) and keeps history after it. A new name starts at the store's last commit
        /// unless ``since`` says otherwise.
        public var durableName: String?
        /// When the position was pruned, or the history rewritten under it: deliver a snapshot (after
        /// ``Event/rewritten(fromSeq:)``) and go on from it, rather than throw.
        public var snapshotWhenPruned = false
        /// The most live messages held while the consumer is busy; more are dropped and later filled from
        /// history, so a slow consumer costs bounded memory here and nothing at the coordinator.
        public var liveBufferMessages = 65_536

        /// Every entity, from the live stream, not durable, throwing when the position was pruned.
        public init() {}
    }

    public typealias Element = Event

    /// The feed endpoint.
    public let feedEndpoint: String
    /// The options the feed was made with.
    public let options: Options
    private let loop: SocketLoop
    private let client: JobClient
    private let reader: FeedReader

    /// Connects a SUB socket to `feed` (subscribing to the filter's entities and the `$commits` and
    /// `$heartbeat` topics) and a request socket to `jobs`. Nothing is read until iteration starts.
    /// - Parameters:
    ///   - feed: the coordinator's feed endpoint (`tcp://127.0.0.1:7401`), or a relay's.
    ///   - jobs: the coordinator's jobs/control endpoint (`tcp://127.0.0.1:7400`), or a relay's: where history,
    ///     snapshots and durable positions are asked for.
    ///   - options: what to follow and from where.
    ///   - curve: the subscriber's CURVE keys (nil: from the environment, else none).
    ///   - context: the ZeroMQ context; nil uses the process's (`ZMQContext.shared()`).
    public init(
        feed: String, jobs: String, options: Options = Options(), curve: CurveClientKeys? = nil,
        context: ZMQContext? = nil
    ) throws {
        self.feedEndpoint = feed
        self.options = options
        let context = try context ?? ZMQContext.shared()
        let socket = try context.makeSocket(.sub)
        let keys = try curve ?? CurveClientKeys.resolve(secretFile: nil, serverKeyFile: nil)
        if let keys { try keys.apply(to: socket) }
        try socket.setReceiveHighWaterMark(10_000)
        try socket.setMaximumMessageSize(Limits.maximumMessageBytes)
        try socket.subscribe(Wire.heartbeatTopic)
        try socket.subscribe(Wire.commitsTopic)
        if options.filter.entities.isEmpty {
            try socket.subscribe("")
        } else {
            for entity in options.filter.entities { try socket.subscribe(entity) }
        }
        try socket.connect(toEach: feed)
        loop = try SocketLoop(
            name: "tributary-feed", sockets: [.init(socket, receives: true)], inboundLimit: options.liveBufferMessages)
        client = try JobClient(endpoint: jobs, curve: keys)
        reader = FeedReader(options: options, inbound: loop.inbound, client: client)
        loop.start()
    }

    /// The feed's iterator. A feed is iterated by one task, once.
    public func makeAsyncIterator() -> Iterator {
        Iterator(reader: reader)
    }

    /// Delivers the feed's events; see ``ChangeFeed``.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let reader: FeedReader

        public mutating func next() async throws -> Event? {
            try await reader.next()
        }
    }

    /// The last sequence number up to which every commit was handed out (or filtered out): where to resume.
    /// Read it from the iterating task, between events.
    public var position: UInt64? { reader.processedPosition }

    /// ``position`` with its epoch: what to hand back (``Options/since`` and ``Options/sinceEpoch``) to resume.
    public var resumePosition: FeedPosition? { reader.processed }

    /// Stores the durable subscriber's position now: every event handed out counts as processed. Call it from
    /// the iterating task, after the last event you process (iteration acknowledges by itself otherwise).
    /// - Throws: ``ChangeFeedError`` carrying `FEED_REWRITTEN` when the coordinator's history no longer holds that
    ///   position (nothing is stored); the coordinator's error for another refusal.
    public func acknowledge() async throws {
        try await reader.acknowledge(force: true)
    }

    /// Closes the sockets; iteration then finishes. Acknowledge first to store a durable position.
    public func close() async {
        await loop.stop()
        await client.close()
    }
}

/// A feed that cannot go on: its position was pruned from history or the history was rewritten under it (and no
/// snapshot was asked for), or the coordinator refused a request.
public struct ChangeFeedError: Error, CustomStringConvertible, Sendable {
    /// A sentence naming what stopped the feed.
    public let message: String
    /// The coordinator's error, when it answered with one.
    public let protocolError: ProtocolError?

    public var description: String { message }
}
