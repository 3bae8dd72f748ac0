import Foundation
import ZeroMQ

@testable import TributaryProtocol

/// A raw SUB socket on a coordinator's feed that follows the `$jobs` topic, as any ZeroMQ client would: connected
/// once the first heartbeat arrives, so nothing published after ``init(feed:)`` returns is missed.
final class JobsTopicSubscriber {
    private let context: ZMQContext
    private let socket: ZMQSocket

    init(feed endpoint: String) throws {
        context = try ZMQContext()
        socket = try context.makeSocket(.sub)
        try socket.subscribe(Wire.heartbeatTopic)
        try socket.subscribe(Wire.jobsTopic)
        try socket.connect(endpoint)
        while String(decoding: try frames()[0], as: UTF8.self) != Wire.heartbeatTopic {}
    }

    /// The next `$jobs` message, skipping heartbeats; throws after 10 s without any feed message, and once
    /// `deadline` has passed (heartbeats alone never end the wait).
    func next(before deadline: ContinuousClock.Instant) throws -> Tributary_V1_JobProgress {
        while ContinuousClock.now < deadline {
            let message = try frames()
            if String(decoding: message[0], as: UTF8.self) == Wire.jobsTopic {
                return try Tributary_V1_JobProgress(serializedBytes: message[1])
            }
        }
        throw TimedOut(what: "a $jobs message before the deadline")
    }

    func close() {
        socket.close()
        context.terminate()
    }

    private func frames() throws -> [Data] {
        guard try socket.waitForInput(milliseconds: 10_000), let frames = try socket.receive() else {
            throw TimedOut(what: "a feed message")
        }
        return frames
    }
}
