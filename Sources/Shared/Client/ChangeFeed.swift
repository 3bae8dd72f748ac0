import Foundation
import ZeroMQ

/// A subscription to the coordinator's change feed, as an `AsyncSequence` of ``ChangeFeed/Event``s.
///
/// Subscribed to every entity, each commit arrives as one ``DidSave`` with all its parts; subscribed to some
/// entities, each matching part arrives on its own. ``Event/connected(lastSeq:)`` comes with the first feed
/// heartbeat, which tells that the subscription is live and which sequence number the store is at.
///
/// ```swift
/// let feed = try ChangeFeed(endpoint: "tcp://127.0.0.1:7401", entities: ["PullRequest"])
/// for await event in feed {
///     if case .didSave(let save) = event { print(save.seq, save.inserted.count) }
/// }
/// ```
public final class ChangeFeed: AsyncSequence, Sendable {
    /// What the feed delivers.
    public enum Event: Sendable {
        /// The first heartbeat: the subscription is live; the store's last sequence number then.
        case connected(lastSeq: UInt64)
        /// A commit (or, with an entity filter, the matching part of one).
        case didSave(DidSave)
    }

    public typealias Element = Event

    /// The feed endpoint.
    public let endpoint: String
    /// The entities subscribed to; empty means all.
    public let entities: Set<String>
    private let loop: SocketLoop
    private let events: AsyncStream<Event>

    /// Connects a SUB socket to `endpoint` and subscribes to `entities` (all when empty).
    public init(endpoint: String, entities: Set<String> = [], context: ZMQContext? = nil) throws {
        self.endpoint = endpoint
        self.entities = entities
        let context = try context ?? ZMQContext()
        let socket = try context.makeSocket(.sub)
        try socket.setReceiveHighWaterMark(0)
        try socket.setMaximumMessageSize(Limits.maximumMessageBytes)
        if entities.isEmpty {
            try socket.subscribe("")
        } else {
            try socket.subscribe(Wire.heartbeatTopic)
            for entity in entities { try socket.subscribe(entity) }
        }
        try socket.connect(endpoint)
        loop = try SocketLoop(name: "tributary-feed", sockets: [.init(socket, receives: true)])
        let (events, continuation) = AsyncStream.makeStream(of: Event.self)
        self.events = events
        loop.start()
        let inbound = loop.inbound
        let filter = entities
        Task.detached {
            var assembler = PartAssembler(filter: filter)
            for await batch in inbound {
                for message in batch {
                    for event in assembler.accept(message.frames) { continuation.yield(event) }
                }
            }
            if let last = assembler.flush() { continuation.yield(last) }
            continuation.finish()
        }
    }

    public func makeAsyncIterator() -> AsyncStream<Event>.Iterator {
        events.makeAsyncIterator()
    }

    /// Unsubscribes and closes the socket; the sequence then finishes.
    public func close() async {
        await loop.stop()
    }
}

/// Joins the per-entity parts of each commit into one ``DidSave`` (when subscribed to everything), passes
/// filtered parts through, and turns the first heartbeat into ``ChangeFeed/Event/connected(lastSeq:)``.
struct PartAssembler {
    let filter: Set<String>
    private var pending: DidSave?
    private var expectedParts = 0
    private var receivedParts = 0
    private var connected = false

    init(filter: Set<String>) {
        self.filter = filter
    }

    mutating func accept(_ frames: [Data]) -> [ChangeFeed.Event] {
        guard frames.count == 2 else { return [] }
        let topic = String(decoding: frames[0], as: UTF8.self)
        if topic == Wire.heartbeatTopic {
            guard !connected, let heartbeat = try? Tributary_V1_FeedHeartbeat(serializedBytes: frames[1]) else {
                return []
            }
            connected = true
            return [.connected(lastSeq: heartbeat.lastSeq)]
        }
        // ZeroMQ matches topic prefixes: "User" also matches "UserProfile". Keep exact matches only.
        guard filter.isEmpty || filter.contains(topic),
            let part = try? Tributary_V1_DidSave(serializedBytes: frames[1])
        else { return [] }
        if !filter.isEmpty { return [.didSave(DidSave(part: part))] }
        var events: [ChangeFeed.Event] = []
        if let current = pending, current.seq != part.seq {
            events.append(.didSave(incomplete(current)))
            pending = nil
        }
        if pending == nil {
            pending = DidSave(part: part)
            expectedParts = Int(max(part.partCount, 1))
            receivedParts = 1
        } else {
            pending?.add(part)
            receivedParts += 1
        }
        if receivedParts >= expectedParts, let complete = pending {
            events.append(.didSave(complete))
            pending = nil
        }
        return events
    }

    mutating func flush() -> ChangeFeed.Event? {
        defer { pending = nil }
        return pending.map { .didSave(incomplete($0)) }
    }

    private func incomplete(_ save: DidSave) -> DidSave {
        var save = save
        save.isComplete = false
        return save
    }
}
