import Foundation
import TributaryCore
import TributaryProtocol

/// The feed's catching up: history pages, read after the saves before them (a subscriber that saved sees its own
/// commit), and snapshot pages, each read on the reader pool so that a subscriber catching up never delays a commit.
package struct FeedHandler: Sendable {
    let parts: HandlerParts

    /// Most commits a history page may ask for.
    static let maximumHistoryCommits = 10_000
    /// Rows per snapshot page when the request does not say, and the most it may ask for.
    static let defaultSnapshotRows = 10_000
    static let maximumSnapshotRows = 100_000

    /// A page of the commits after `query.after`, checked: the filter's entities and attributes are the model's, the
    /// page no larger than ``maximumHistoryCommits``.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming what is wrong; from the value, the store's refusal of a
    ///   rewritten or pruned history.
    package func history(_ query: FeedStore.HistoryQuery) throws -> Promised<FeedStore.HistoryPage> {
        guard query.maxCommits <= Self.maximumHistoryCommits else {
            throw ProtocolError(
                .invalidRequest, "max_commits \(query.maxCommits) is over the limit of \(Self.maximumHistoryCommits)")
        }
        try check(query.filter)
        let store = parts.store
        return RequestPlace.afterSaves(parts) { try await store.feed.historyPage(query) }
    }

    /// The next page of the open snapshot `id`, or the first of a new one of `entities` when `id` is 0.
    /// - Parameter maxRows: rows per page; 0 for ``defaultSnapshotRows``.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` for too many rows, too many open snapshots or an unknown
    ///   snapshot; ``/TributaryCore/StoreError`` `unknownEntity`.
    package func snapshotPage(_ id: UInt64, entities: Set<String>, maxRows: Int) throws -> Promised<SnapshotPage> {
        guard maxRows <= Self.maximumSnapshotRows else {
            throw ProtocolError(.invalidRequest, "max_rows \(maxRows) is over the limit of \(Self.maximumSnapshotRows)")
        }
        let rows = maxRows == 0 ? Self.defaultSnapshotRows : maxRows
        let readers = parts.readers
        let (snapshotID, snapshot) = try readers.snapshot(id, entities: entities)
        return RequestPlace.committed(parts) {
            let page = try await snapshot.nextPage(maxRows: rows)
            if page.done { readers.snapshotFinished(snapshotID) }
            return SnapshotPage(
                snapshotID: snapshotID, seq: page.seq, epoch: page.epoch, objects: page.objects, done: page.done)
        }
    }

    /// Checks that a filter names the model's entities, and attributes or relationships of them.
    private func check(_ filter: FeedFilter) throws {
        let model = parts.configuration.model
        for name in filter.entities.sorted() where model.entity(named: name) == nil {
            let known = model.entities.map(\.name).joined(separator: ", ")
            throw ProtocolError(.unknownEntity, "unknown entity '\(name)' (the model has \(known))")
        }
        let selected =
            filter.entities.isEmpty ? model.entities : filter.entities.sorted().compactMap { model.entity(named: $0) }
        for name in filter.attributes.sorted()
        where !selected.contains(where: { $0.attribute(named: name) != nil || $0.relationship(named: name) != nil }) {
            throw ProtocolError(
                .unknownAttribute, "no subscribed entity has an attribute or relationship named '\(name)'")
        }
    }
}
