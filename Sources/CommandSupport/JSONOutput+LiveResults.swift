import Foundation
import TributaryCore

extension JSONOutput {
    /// `tributary watch --json`: one snapshot of a live result as its difference from the line before:
    /// `{"seq": N, "count": rows, "removed": [{"offset", "id"}], "inserted": [{"offset", "id"}],
    /// "moved": [{"from", "to", "id"}], "updated": [offsets], "refetched": bool}`, and for a sectioned result
    /// `"sections": [{"name", "count"}]`. Removals are at offsets of the
    /// previous snapshot, insertions at offsets of this one; applying the removals (highest offset first), then the
    /// insertions (lowest first), with a moved row removed from `from` and inserted at `to`, turns the previous
    /// snapshot's ids into this one's.
    public static func liveResults(_ snapshot: LiveResultsSnapshot, sectioned: Bool = false) throws -> String {
        let removed = snapshot.difference.removals.map { change -> [String: Any] in
            guard case .remove(let offset, let id, _) = change else { return [:] }
            return ["offset": offset, "id": ObjectText.id(id)]
        }
        let inserted = snapshot.difference.insertions.map { change -> [String: Any] in
            guard case .insert(let offset, let id, _) = change else { return [:] }
            return ["offset": offset, "id": ObjectText.id(id)]
        }
        var line: [String: Any] = [
            "seq": NSNumber(value: snapshot.seq), "count": snapshot.ids.count, "removed": removed, "inserted": inserted,
            "moved": snapshot.moved.map { ["from": $0.from, "to": $0.to, "id": ObjectText.id($0.id)] },
            "updated": snapshot.updated, "refetched": snapshot.refetched,
        ]
        if sectioned { line["sections"] = snapshot.sections.map { ["name": $0.name, "count": $0.count] } }
        return try encode(line)
    }

    /// `tributary watch --group-by … --json`: one state of a live aggregate as its difference from the line before:
    /// `{"seq": N, "count": rows, "removed": [{"offset"}], "inserted": [{"offset", "row"}], "moved": [{"from",
    /// "to"}], "updated": [{"offset", "row"}], "refetched": bool}`, each row keyed by its names
    /// (``aggregateRow(_:)``). Applying the removals and the moves out (at the previous state's offsets, highest
    /// first), then the insertions and the moves in (at this one's, lowest first), then the updated rows' values,
    /// turns the previous state's rows into this one's.
    public static func liveAggregate(_ snapshot: LiveAggregateSnapshot) throws -> String {
        func row(_ offset: Int) -> [String: Any] { aggregateObject(snapshot.rows[offset]) }
        return try encode([
            "seq": NSNumber(value: snapshot.seq), "count": snapshot.rows.count,
            "removed": snapshot.removed.map { ["offset": $0.offset] },
            "inserted": snapshot.inserted.map { ["offset": $0.offset, "row": row($0.offset)] },
            "moved": snapshot.moved.map { ["from": $0.from, "to": $0.to] },
            "updated": snapshot.updated.map { ["offset": $0, "row": row($0)] }, "refetched": snapshot.refetched,
        ])
    }
}
