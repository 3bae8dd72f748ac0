import Foundation
import TributaryCore
import TributaryMessaging
import TributaryProtocol
import ZeroMQ

/// A subscription to the feed's `$jobs` topic (each job's progress and state after every commit that changes them)
/// and its `$heartbeat`, for a client that waits for jobs it pushes to end: made before the push, so that an end
/// committed right after it is not missed. Hand it to ``JobClient/waitForJob(_:following:checkingEvery:logger:)`` or
/// ``JobClient/waitForBatch(_:following:checkingEvery:logger:progress:)``.
///
/// ZeroMQ subscribes in the background: a job that ends before the subscription reaches the coordinator is not
/// published to it. The waits therefore check the jobs once the feed has shown it is live (its first message, a
/// heartbeat at the latest 500 ms in), and again every so often, so that a dropped message cannot hang them.
///
/// ```swift
/// let ends = try JobProgressFeed(feed: "tcp://127.0.0.1:7401")
/// let pushed = try await client.push([JobSpec(kind: "report")])
/// let job = try await client.waitForJob(pushed.ids[0], following: ends)
/// await ends.close()
/// ```
public final class JobProgressFeed: Sendable {
    /// What one feed message said.
    enum Event: Equatable {
        /// A job's progress or state changed (a commit, a failure, a cancel).
        case progress(JobProgress)
        /// The coordinator's heartbeat: the subscription is live.
        case heartbeat
    }

    /// The feed endpoint followed.
    public let feedEndpoint: String
    private let loop: SocketLoop

    /// Connects a SUB socket to `feed`, subscribed to `$jobs` and `$heartbeat`.
    /// - Parameters:
    ///   - feed: the coordinator's feed endpoint (`tcp://127.0.0.1:7401`), or a relay's.
    ///   - curve: the subscriber's CURVE keys (nil: from the environment, else none).
    ///   - context: the ZeroMQ context; nil uses the process's (`ZMQContext.shared()`).
    /// - Throws: `ZMQError` when the socket cannot be made or the endpoint is malformed.
    public init(feed: String, curve: CurveClientKeys? = nil, context: ZMQContext? = nil) throws {
        feedEndpoint = feed
        let context = try context ?? ZMQContext.shared()
        let socket = try context.makeSocket(.sub)
        do {
            let keys = try curve ?? CurveClientKeys.resolve(secretFile: nil, serverKeyFile: nil)
            if let keys { try keys.apply(to: socket) }
            try socket.setMaximumMessageSize(Limits.maximumMessageBytes)
            // Both before connecting, so they go out together when the connection is made.
            try socket.subscribe(Wire.jobsTopic)
            try socket.subscribe(Wire.heartbeatTopic)
            try socket.connect(toEach: feed)
            // A waiter far behind a busy store's jobs: the oldest messages are kept, later ones dropped, and the
            // wait's periodic check finds what they said.
            loop = try SocketLoop(
                name: "tributary-jobs-feed", sockets: [.init(socket, receives: true)], inboundLimit: 65_536)
        } catch {
            socket.close()
            throw error
        }
        loop.start()
    }

    /// The messages received, in batches as they arrive; iterated by one task at a time.
    var inbound: InboundQueue { loop.inbound }

    /// The events in `batch` (messages on other topics, or that do not decode, are left out).
    static func events(in batch: [SocketLoop.Inbound]) -> [Event] {
        batch.compactMap { message in
            guard message.frames.count == 2 else { return nil }
            switch String(decoding: message.frames[0], as: UTF8.self) {
            case Wire.heartbeatTopic:
                return .heartbeat
            case Wire.jobsTopic:
                guard let wire = try? Tributary_V1_JobProgress(serializedBytes: message.frames[1]),
                    let state = JobState(rawValue: wire.state)
                else { return nil }
                return .progress(
                    JobProgress(
                        id: Int64(clamping: wire.jobID), batch: wire.batch, state: state, done: wire.done,
                        total: wire.total, attempt: Int(wire.attempt)))
            default:
                return nil
            }
        }
    }

    /// Closes the socket; a wait following the feed then goes on with its periodic checks alone.
    public func close() async {
        await loop.stop()
    }
}
