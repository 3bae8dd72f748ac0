import Foundation
import TributaryCore
import TributaryProtocol

/// The change feed's requests: history pages and snapshots (for ``ChangeFeed`` and ``ViewContext``, which read
/// their pages as the protocol carries them), and durable subscribers.
extension JobClient {
    /// One page of the stored didSave parts after `after` (up to `until`, 0 = the last commit).
    /// - Throws: ``/TributaryProtocol/ProtocolError`` `HISTORY_PRUNED` when that history is no longer kept.
    func history(
        after: FeedPosition, until: UInt64 = 0, filter: FeedFilter = FeedFilter(), maxCommits: UInt32 = 0
    ) async throws -> Tributary_V1_HistoryReply {
        let request = Tributary_V1_HistoryRequest.with {
            $0.afterSeq = after.seq
            $0.afterEpoch = after.epoch
            $0.untilSeq = until
            $0.entities = filter.entities.sorted()
            $0.attributes = filter.attributes.sorted()
            $0.maxCommits = maxCommits
        }
        let reply = try await connection.request(.historyRequest(request), timeout: .seconds(60))
        guard case .historyReply(let page) = reply.body else { throw Self.unexpected(reply) }
        return page
    }

    /// The next page of a snapshot of the current objects; `id` 0 starts one (of `entities`, all when empty).
    func snapshotPage(id: UInt64, entities: Set<String> = [], maxRows: UInt32 = 0) async throws
        -> Tributary_V1_SnapshotPage
    {
        let request = Tributary_V1_SnapshotRequest.with {
            $0.snapshotID = id
            $0.entities = entities.sorted()
            $0.maxRows = maxRows
        }
        let reply = try await connection.request(.snapshotRequest(request), timeout: .seconds(60))
        guard case .snapshotPage(let page) = reply.body else { throw Self.unexpected(reply) }
        return page
    }

    /// Registers the durable subscriber `name` at `position`, or moves it there; with `registerOnly`, one
    /// registered before keeps its position. Returns the stored position.
    public func updateSubscriber(name: String, position: UInt64, epoch: UInt64 = 0, registerOnly: Bool = false)
        async throws -> DurableSubscriber
    {
        let update = Tributary_V1_SubscriberUpdate.with {
            $0.name = name
            $0.position = position
            $0.epoch = epoch
            $0.registerOnly = registerOnly
        }
        let reply = try await connection.request(.subscriberUpdate(update))
        guard case .subscriberInfo(let info) = reply.body else { throw Self.unexpected(reply) }
        return DurableSubscriber(info)
    }

    /// The durable subscribers and their positions.
    public func subscribers() async throws -> [DurableSubscriber] {
        let reply = try await connection.request(.subscribersRequest(.init()))
        guard case .subscribersReply(let list) = reply.body else { throw Self.unexpected(reply) }
        return list.subscribers.map(DurableSubscriber.init)
    }

    /// Forgets a durable subscriber, so its position no longer holds history back.
    public func deleteSubscriber(name: String) async throws -> DurableSubscriber {
        let reply = try await connection.request(.deleteSubscriberRequest(.with { $0.name = name }))
        guard case .subscriberInfo(let info) = reply.body else { throw Self.unexpected(reply) }
        return DurableSubscriber(info)
    }
}
