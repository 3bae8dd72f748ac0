import Foundation

/// One state of a live aggregate (``AggregateRequest`` kept current by a view context): its rows, and how they
/// differ from the previous snapshot delivered, each row known by its group key.
public struct LiveAggregateSnapshot: Sendable {
    /// The names of each row's values: the request's ``AggregateRequest/columnNames``.
    public let names: [String]
    /// The groups, in the request's order, within its having, offset and limit.
    public let rows: [AggregateRow]
    /// The last commit this state reflects.
    public let seq: UInt64
    /// From the previous snapshot's group keys to these: removals (at their old offsets) and insertions (at their
    /// new offsets), a group that moved appearing as both, associated with each other (`CollectionDifference`'s
    /// moves).
    public let difference: CollectionDifference<[AttributeValue?]>
    /// Offsets in ``rows`` of the groups that were shown before and whose aggregates changed (moved ones included).
    public let updated: [Int]
    /// Whether the store was asked again for this state (a change that could not be judged from the feed).
    public let refetched: Bool

    /// A snapshot of `rows` (of values named `names`) after `previous`.
    package init(names: [String], rows: [AggregateRow], previous: [AggregateRow], seq: UInt64, refetched: Bool) {
        self.names = names
        self.rows = rows
        self.seq = seq
        self.refetched = refetched
        difference = rows.map(\.groupKey).difference(from: previous.map(\.groupKey)).inferringMoves()
        let before = Dictionary(previous.map { ($0.groupKey, $0.values) }, uniquingKeysWith: { first, _ in first })
        updated = rows.indices.filter { index in
            before[rows[index].groupKey].map { $0 != rows[index].values } ?? false
        }
    }

    /// The result as an aggregate fetch gives it.
    public var result: AggregateResult {
        AggregateResult(names: names, rows: rows, seq: seq)
    }

    /// The groups inserted, with their offsets in ``rows``.
    public var inserted: [(offset: Int, row: AggregateRow)] {
        difference.insertions.compactMap {
            guard case .insert(let offset, _, nil) = $0 else { return nil }
            return (offset, rows[offset])
        }
    }

    /// The group keys removed, with their offsets in the previous snapshot.
    public var removed: [(offset: Int, groupKey: [AttributeValue?])] {
        difference.removals.compactMap {
            guard case .remove(let offset, let key, nil) = $0 else { return nil }
            return (offset, key)
        }
    }

    /// The groups moved: from their offset in the previous snapshot to their offset in ``rows``.
    public var moved: [(from: Int, to: Int)] {
        difference.insertions.compactMap {
            guard case .insert(let offset, _, let from?) = $0 else { return nil }
            return (from, offset)
        }
    }
}
