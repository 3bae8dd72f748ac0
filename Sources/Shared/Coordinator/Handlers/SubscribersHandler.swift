import Foundation
import TributaryCore
import TributaryProtocol

/// Durable subscribers: a position recorded (or registered) and deleted as writes behind the saves before them,
/// listed from what is committed.
package struct SubscribersHandler: Sendable {
    let parts: HandlerParts

    /// Records that subscriber `name` read through `position` (never moving it back), or only registers it at
    /// `position` when it is new and `registerOnly`.
    package func update(_ name: String, position: FeedPosition, registerOnly: Bool) throws
        -> Promised<DurableSubscriber>
    {
        try Self.check(name)
        return try RequestPlace.written(
            .updateSubscriber(name: name, position: position, registerOnly: registerOnly), parts)
    }

    /// The durable subscribers and their positions.
    package func list() -> Promised<[DurableSubscriber]> {
        let store = parts.store
        return RequestPlace.committed(parts) { try await store.feed.subscribers() }
    }

    /// Deletes subscriber `name`, so the history it held back may be pruned.
    package func delete(_ name: String) throws -> Promised<DurableSubscriber> {
        try Self.check(name)
        return try RequestPlace.written(.deleteSubscriber(name: name), parts)
    }

    private static func check(_ name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 200 else {
            throw ProtocolError(.invalidRequest, "a durable subscriber needs a name of 1 to 200 bytes")
        }
    }
}
