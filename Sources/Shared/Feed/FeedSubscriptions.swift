import Foundation
import Synchronization

/// The topics the change feed's subscribers asked for, as the coordinator's XPUB socket reports them: a message
/// for a topic no subscription matches would be dropped by ZeroMQ anyway, so the coordinator does not build it.
///
/// An XPUB (not verbose) passes on a topic's first subscription (`\u{1}topic`) and, once no subscriber holds it
/// any more (unsubscribed or disconnected), its unsubscription (`\u{0}topic`). A subscription matches every topic
/// it is a prefix of; the empty one matches all.
final class FeedSubscriptions: Sendable {
    private let topics = Mutex<Set<Data>>([])

    /// Records one message read from the XPUB; anything that is not a subscription or unsubscription is ignored.
    func record(_ frames: [Data]) {
        guard frames.count == 1, let first = frames[0].first, first <= 1 else { return }
        let topic = Data(frames[0].dropFirst())
        topics.withLock { topics in
            if first == 1 { topics.insert(topic) } else { topics.remove(topic) }
        }
    }

    /// Whether some subscriber would receive a message on `topic`.
    func wants(_ topic: Data) -> Bool {
        topics.withLock { topics in
            topics.contains { subscription in
                subscription.count <= topic.count && topic.starts(with: subscription)
            }
        }
    }
}
