import Foundation
import Synchronization

/// The topics the change feed's subscribers asked for, as the coordinator's XPUB socket reports them: a message
/// for a topic no subscription matches would be dropped by ZeroMQ anyway, so the coordinator does not build it.
///
/// An XPUB (not verbose) passes on a topic's first subscription (`\u{1}topic`) and, once no subscriber holds it
/// any more (unsubscribed or disconnected), its unsubscription (`\u{0}topic`). A subscription matches every topic
/// it is a prefix of; the empty one matches all.
final class FeedSubscriptions: Sendable {
    /// The most distinct topics followed; past that (a peer subscribing to topic after topic), everything is built
    /// and ZeroMQ filters, as without this.
    static let maximumTopics = 1024

    private struct Topics {
        var subscribed: Set<Data> = []
        var overflowed = false
    }

    private let topics = Mutex(Topics())

    /// Records one message read from the XPUB; anything that is not a subscription or unsubscription is ignored.
    func record(_ frames: [Data]) {
        guard frames.count == 1, let first = frames[0].first, first <= 1 else { return }
        let topic = Data(frames[0].dropFirst())
        topics.withLock { topics in
            if first == 0 {
                topics.subscribed.remove(topic)
            } else if topics.subscribed.count < Self.maximumTopics {
                topics.subscribed.insert(topic)
            } else {
                topics.overflowed = true
            }
        }
    }

    /// Whether some subscriber would receive a message on `topic`.
    func wants(_ topic: Data) -> Bool {
        topics.withLock { topics in
            topics.overflowed
                || topics.subscribed.contains { subscription in
                    subscription.count <= topic.count && topic.starts(with: subscription)
                }
        }
    }
}
