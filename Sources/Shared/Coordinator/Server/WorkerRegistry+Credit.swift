import Foundation
import TributaryCore

/// Workers' credit: how many more jobs each may be sent. Claims take it (``WriterHandOver``), and what a claim leaves
/// unused comes back.
extension WorkerRegistry {
    /// The most jobs leased to one worker by one claim.
    static let claimsPerTransaction = 256
    /// The most jobs a worker may hold unfinished: a larger credit is a bug or an attack, not a request.
    static let maximumCredit: UInt64 = 1024

    /// Credit from a `WorkerReady` or a save: the worker may be sent that many more jobs (not while it leaves).
    mutating func addCredit(_ credit: UInt32, to peer: Data) {
        if let held = self[peer]?.credit, self[peer]?.leaving == false {
            self[peer]?.credit = UInt32(min(UInt64(held) + UInt64(credit), Self.maximumCredit))
        }
    }

    /// Takes the credit of each worker that has some, up to one claim's worth, as claims for the writer.
    mutating func takeCredit(runLimits: RunLimits) -> [QueuedCommit.Claim] {
        var claims: [QueuedCommit.Claim] = []
        var taken: Set<Data> = []
        var random = SystemRandomNumberGenerator()
        while let peer = nextWithCredit(excluding: taken), let worker = self[peer] {
            taken.insert(peer)
            let wanted = min(Int(worker.credit), Self.claimsPerTransaction)
            self[peer]?.credit -= UInt32(wanted)
            claims.append(
                QueuedCommit.Claim(
                    peer: peer, worker: worker,
                    request: ClaimRequest(
                        worker: worker.id, kinds: worker.jobKinds,
                        queues: JobQueue.claimOrder(worker.queues, weights: worker.queueWeights, using: &random),
                        limit: wanted, runLimits: runLimits)))
        }
        return claims
    }

    /// Gives back credit a claim did not use, unless the worker left (or registered anew) meanwhile.
    mutating func giveBack(_ credit: Int, to peer: Data, of worker: WorkerRecord) {
        if credit > 0, self[peer]?.id == worker.id, self[peer]?.leaving == false {
            self[peer]?.credit += UInt32(credit)
        }
    }
}
