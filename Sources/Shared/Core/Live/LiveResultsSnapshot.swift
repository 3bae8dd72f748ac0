import Foundation

/// One state of a live result (`NSFetchedResultsController`'s content after a change, SwiftData's `@Query`): the
/// ids of the objects the request selects, in order, and how they differ from the previous snapshot delivered.
public struct LiveResultsSnapshot: Sendable {
    /// The objects, in the request's order, within its offset and limit.
    public let ids: [ObjectID]
    /// The last commit this state reflects.
    public let seq: UInt64
    /// From the previous snapshot's ids to these: removals (at their old offsets) and insertions (at their new
    /// offsets), a moved object appearing as both, associated with each other (`CollectionDifference`'s moves).
    public let difference: CollectionDifference<ObjectID>
    /// Offsets in ``ids`` of the objects whose values changed and that were already shown (moved ones included).
    public let updated: [Int]
    /// Whether the store was asked again for this state (a change that could not be judged from the feed).
    public let refetched: Bool
    /// The rows grouped by the section key path, in order; empty when the result has no sections (and when it has no
    /// rows).
    public let sections: [LiveResultsSection]
    /// From the previous snapshot's sections to these, by value: a section whose last row left is removed, one whose
    /// first row came is inserted (`NSFetchedResultsController`'s section changes).
    public let sectionDifference: CollectionDifference<AttributeValue?>

    /// A snapshot of `ids` after `previous`, with the ids whose values changed, and its sections after those of the
    /// previous snapshot.
    package init(
        ids: [ObjectID], previous: [ObjectID], updated: Set<ObjectID>, seq: UInt64, refetched: Bool,
        sections: [LiveResultsSection] = [], previousSections: [LiveResultsSection] = []
    ) {
        self.ids = ids
        self.seq = seq
        self.refetched = refetched
        self.sections = sections
        sectionDifference = sections.map(\.value).difference(from: previousSections.map(\.value))
        difference = ids.difference(from: previous).inferringMoves()
        let before = Set(previous)
        self.updated = ids.indices.filter { updated.contains(ids[$0]) && before.contains(ids[$0]) }
    }

    /// The objects inserted, with their offsets in ``ids``.
    public var inserted: [(offset: Int, id: ObjectID)] {
        difference.insertions.compactMap {
            guard case .insert(let offset, let id, nil) = $0 else { return nil }
            return (offset, id)
        }
    }

    /// The objects removed, with their offsets in the previous snapshot.
    public var removed: [(offset: Int, id: ObjectID)] {
        difference.removals.compactMap {
            guard case .remove(let offset, let id, nil) = $0 else { return nil }
            return (offset, id)
        }
    }

    /// The objects moved: from their offset in the previous snapshot to their offset in ``ids``.
    public var moved: [(from: Int, to: Int, id: ObjectID)] {
        difference.insertions.compactMap {
            guard case .insert(let offset, let id, let from?) = $0 else { return nil }
            return (from, offset, id)
        }
    }

    /// The section holding the row at `offset` of ``ids``, as an index in ``sections``, and the row's offset in it.
    public func section(ofRowAt offset: Int) -> (section: Int, row: Int)? {
        var low = 0
        var high = sections.count
        while low < high {
            let middle = (low + high) / 2
            if sections[middle].range.upperBound <= offset {
                low = middle + 1
            } else {
                high = middle
            }
        }
        guard low < sections.count, sections[low].range.contains(offset) else { return nil }
        return (low, offset - sections[low].range.lowerBound)
    }
}
