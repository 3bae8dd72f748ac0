import Foundation

/// The first rows of a fetch's result, kept exact as commits change the objects: the rows a live result shows
/// (after its offset, up to its limit) and a few more, so that a row leaving does not need a fetch to fill its place.
///
/// The window always holds the first `ids.count` rows of the true result, in order; `isComplete` says the result has
/// no more. A change it cannot place without the rest of the result (a row leaving a window that was full, so the
/// one after the last is unknown) asks for a refetch instead.
package struct LiveResultsWindow {
    /// What a commit did to the window.
    package enum Outcome: Equatable {
        /// Applied: the rows whose values changed and that stayed in the window.
        case applied(updated: Set<UUID>)
        /// The window cannot be kept exact from what it knows: fetch it again.
        case needsRefetch
    }

    /// The rows, in order.
    package private(set) var ids: [UUID]
    /// Whether the result has no rows after the last of ``ids``.
    package private(set) var isComplete: Bool
    /// The rows' values as last known (for sorting).
    private var subjects: [UUID: PredicateSubject]
    /// The rows the window must hold to show its rows: offset + limit (the whole result without a limit).
    let needed: Int
    /// The rows it keeps at most: ``needed`` and the spare ones.
    let capacity: Int
    let predicate: CompiledPredicate?
    let sort: CompiledSort

    /// A window over `fetched`, the first rows of the result in order, read with a limit of `capacity + 1` (so
    /// that one row more than `capacity` says the result goes on).
    package init(
        fetched: [PredicateSubject], needed: Int, capacity: Int, predicate: CompiledPredicate?, sort: CompiledSort
    ) {
        self.needed = needed
        self.capacity = capacity
        self.predicate = predicate
        self.sort = sort
        let kept = fetched.prefix(capacity)
        ids = kept.map(\.id)
        subjects = Dictionary(kept.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        isComplete = fetched.count <= capacity
    }

    /// The rows after `offset`, up to `limit` (0: all).
    package func visible(offset: Int, limit: Int) -> ArraySlice<UUID> {
        ids.dropFirst(offset).prefix(limit == 0 ? Int.max : limit)
    }

    /// The last known values of `id`, a row of the window.
    func subject(_ id: UUID) -> PredicateSubject? { subjects[id] }

    /// Applies a commit: `changed` are objects of the entity it inserted or updated, with their whole values after
    /// it; `deleted` the ids it deleted. Key paths read through `resolver`.
    package mutating func apply(
        changed: [PredicateSubject], deleted: [UUID], resolver: any PredicateResolver
    ) -> Outcome {
        var position = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, $0) })
        var removed = Set<UUID>()
        var updated = Set<UUID>()
        for id in deleted where position[id] != nil {
            removed.insert(id)
            subjects[id] = nil
        }
        var entering: [PredicateSubject] = []
        for subject in changed {
            let wasIn = position[subject.id] != nil && !removed.contains(subject.id)
            if wasIn {
                removed.insert(subject.id)
                subjects[subject.id] = nil
            }
            guard predicate?.evaluate(subject, resolver: resolver) ?? true else { continue }
            entering.append(subject)
            if wasIn { updated.insert(subject.id) }
        }
        if !removed.isEmpty {
            ids.removeAll { removed.contains($0) }
            position = [:]
        }
        // A row that now sorts after the last one of an incomplete window is beyond it (unknown rows may come
        // between), so it leaves; any other enters at its place.
        for subject in entering {
            if !isComplete, let last = ids.last, let lastSubject = subjects[last],
                !sort.areInIncreasingOrder(subject, lastSubject, resolver: resolver)
            {
                updated.remove(subject.id)
                continue
            }
            if !isComplete && ids.isEmpty {
                updated.remove(subject.id)
                continue
            }
            let index = insertionIndex(of: subject, resolver: resolver)
            ids.insert(subject.id, at: index)
            subjects[subject.id] = subject
        }
        if ids.count > capacity {
            for id in ids[capacity...] {
                subjects[id] = nil
                updated.remove(id)
            }
            ids.removeLast(ids.count - capacity)
            isComplete = false
        }
        if !isComplete && ids.count < needed { return .needsRefetch }
        return .applied(updated: updated)
    }

    /// Where `subject` goes among the rows (binary search on the sort).
    private func insertionIndex(of subject: PredicateSubject, resolver: any PredicateResolver) -> Int {
        var low = 0
        var high = ids.count
        while low < high {
            let middle = (low + high) / 2
            guard let other = subjects[ids[middle]] else { return ids.count }
            if sort.areInIncreasingOrder(other, subject, resolver: resolver) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }
}
