import Foundation
import TributaryProtocol

/// Saves received together, to be applied in one transaction (group commit) and answered one by one.
struct SaveGroup {
    struct Member {
        let save: Tributary_V1_SaveChanges
        let peer: Data
        let worker: String
        let requestID: UInt64
    }

    private(set) var members: [Member] = []

    var isEmpty: Bool { members.isEmpty }
    var count: Int { members.count }

    mutating func append(_ save: Tributary_V1_SaveChanges, from peer: Data, worker: String, requestID: UInt64) {
        members.append(Member(save: save, peer: peer, worker: worker, requestID: requestID))
    }
}
