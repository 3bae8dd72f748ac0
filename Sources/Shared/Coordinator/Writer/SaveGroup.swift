import Foundation
import TributaryCore

/// Saves gathered for one group commit, in arrival order, with whom to answer.
struct SaveGroup {
    /// One save and whom to answer.
    struct Member: Sendable {
        let save: SaveRequest
        let peer: Data
        let worker: String
        let requestID: UInt64
    }

    private(set) var members: [Member] = []

    var isEmpty: Bool { members.isEmpty }
    var count: Int { members.count }

    mutating func append(_ member: Member) {
        members.append(member)
    }
}
