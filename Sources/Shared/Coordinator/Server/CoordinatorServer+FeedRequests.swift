import Foundation
import TributaryCore
import TributaryProtocol

/// The feed's requests on the ROUTER: history pages, snapshots and durable subscribers. History and snapshot
/// pages are read by the ``ReaderPool``, so a subscriber catching up never delays a commit.
extension CoordinatorServer {
    /// Most commits a history page may ask for.
    static let maximumHistoryCommits: UInt32 = 10_000

    func history(_ request: Tributary_V1_HistoryRequest, from peer: Data, requestID: UInt64) throws {
        try Intake.requireInt64(request.afterSeq, "after_seq")
        try Intake.requireInt64(request.untilSeq, "until_seq")
        guard request.maxCommits <= Self.maximumHistoryCommits else {
            throw ProtocolError(
                .invalidRequest, "max_commits \(request.maxCommits) is over the limit of \(Self.maximumHistoryCommits)")
        }
        var query = FeedStore.HistoryQuery(after: request.afterSeq)
        query.afterEpoch = request.afterEpoch
        query.until = request.untilSeq
        query.filter = try feedFilter(entities: request.entities, attributes: request.attributes)
        if request.maxCommits > 0 { query.maxCommits = Int(request.maxCommits) }
        let store = self.store
        try readAfterSaves(peer: peer, requestID: requestID) { [query] in
            .historyReply(try await store.feed.history(query))
        }
    }

    func snapshot(_ request: Tributary_V1_SnapshotRequest, from peer: Data, requestID: UInt64) throws {
        try readers.snapshotPage(request, peer: peer, requestID: requestID)
    }

    func subscriberUpdate(_ update: Tributary_V1_SubscriberUpdate, from peer: Data, requestID: UInt64) throws {
        try Self.requireSubscriberName(update.name)
        try Intake.requireInt64(update.position, "position")
        let write = StoreWrite<DurableSubscriber>.updateSubscriber(
            name: update.name, position: FeedPosition(seq: update.position, epoch: update.epoch),
            registerOnly: update.registerOnly)
        answer(after: write, to: peer, requestID: requestID) { .subscriberInfo($0.wire) }
    }

    /// Answered by the reader pool from the store.
    func listSubscribers(from peer: Data, requestID: UInt64) throws {
        let store = store
        try readers.submit(peer: peer, requestID: requestID) {
            let subscribers = try await store.feed.subscribers()
            return .subscribersReply(.with { $0.subscribers = subscribers.map(\.wire) })
        }
    }

    func deleteSubscriber(_ request: Tributary_V1_DeleteSubscriberRequest, from peer: Data, requestID: UInt64)
        throws
    {
        try Self.requireSubscriberName(request.name)
        answer(after: .deleteSubscriber(name: request.name), to: peer, requestID: requestID) {
            .subscriberInfo($0.wire)
        }
    }

    private func feedFilter(entities: [String], attributes: [String]) throws -> FeedFilter {
        let model = configuration.model
        for name in entities where model.entity(named: name) == nil {
            let known = model.entities.map(\.name).joined(separator: ", ")
            throw ProtocolError(.unknownEntity, "unknown entity '\(name)' (the model has \(known))")
        }
        let selected = entities.isEmpty ? model.entities : entities.compactMap { model.entity(named: $0) }
        for name in attributes
        where !selected.contains(where: { $0.attribute(named: name) != nil || $0.relationship(named: name) != nil }) {
            throw ProtocolError(
                .unknownAttribute, "no subscribed entity has an attribute or relationship named '\(name)'")
        }
        return FeedFilter(entities: Set(entities), attributes: Set(attributes))
    }

    private static func requireSubscriberName(_ name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 200 else {
            throw ProtocolError(.invalidRequest, "a durable subscriber needs a name of 1 to 200 bytes")
        }
    }
}
