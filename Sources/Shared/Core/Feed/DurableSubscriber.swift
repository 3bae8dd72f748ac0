import Foundation
import TributaryProtocol

/// A durable subscriber the store keeps a position for: it resumes after `position` when it comes back.
public struct DurableSubscriber: Sendable, Equatable {
    /// The name it registered with (`ChangeFeed/Options/durableName`, `tributary subscribe --durable`).
    public var name: String
    /// The last sequence number it acknowledged.
    public var position: UInt64
    /// When its position was last stored.
    public var updatedAt: Date

    /// A subscriber `name` at `position`, stored at `updatedAt`.
    public init(name: String, position: UInt64, updatedAt: Date) {
        self.name = name
        self.position = position
        self.updatedAt = updatedAt
    }

    /// The subscriber a `SubscriberInfo` carries.
    public init(_ wire: Tributary_V1_SubscriberInfo) {
        self.init(name: wire.name, position: wire.position, updatedAt: Date(timeIntervalSince1970: wire.updatedAt))
    }

    /// As `SubscriberInfo` carries it.
    public var wire: Tributary_V1_SubscriberInfo {
        Tributary_V1_SubscriberInfo.with {
            $0.name = name
            $0.position = position
            $0.updatedAt = updatedAt.timeIntervalSince1970
        }
    }
}
