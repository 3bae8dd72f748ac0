import Foundation
import TributaryCore

/// Saves gathered for group commits, in arrival order, with whom to answer.
struct SaveGroup {
    /// One save and whom to answer.
    struct Member: Sendable {
        let save: SaveRequest
        let peer: Data
        let worker: String
        let requestID: UInt64
        /// The objects its change set writes (rows of its batches), counted once; for a batch change, the most it
        /// may select.
        let rows: Int
        /// When the router took it from its message.
        let receivedAt = ContinuousClock.now

        init(save: SaveRequest, peer: Data, worker: String, requestID: UInt64) {
            self.save = save
            self.peer = peer
            self.worker = worker
            self.requestID = requestID
            rows =
                save.batchChange.map { Int($0.limit) }
                ?? save.changes.batches.reduce(0) { $0 + $1.ids.count / 16 }
        }
    }

    private(set) var members: [Member] = []

    var isEmpty: Bool { members.isEmpty }
    var count: Int { members.count }
    /// The rows of the saves gathered.
    private(set) var rows = 0

    mutating func append(_ member: Member) {
        members.append(member)
        rows += member.rows
    }

    /// Takes the first members, in order, while they fit in `rows` rows; none when the first does not.
    mutating func take(fitting rows: Int) -> [Member] {
        var taken = 0
        var end = 0
        while end < members.count && taken + members[end].rows <= rows {
            taken += members[end].rows
            end += 1
        }
        defer {
            members.removeFirst(end)
            self.rows -= taken
        }
        return Array(members[..<end])
    }

    /// Takes the first members, in order, up to `budget` rows: at least one, and no more once the budget is
    /// reached (a save larger than the budget goes alone).
    mutating func take(rowBudget budget: Int) -> [Member] {
        guard let first = members.first, first.rows > budget else { return take(fitting: budget) }
        members.removeFirst()
        rows -= first.rows
        return [first]
    }
}
