import Foundation
import TributaryCore

/// Workers' credit: how many more jobs each may be sent. The router owns it; claims take it, and what a claim
/// leaves unused comes back.
extension CoordinatorServer {
    /// The most jobs leased to one worker by one claim.
    static let claimsPerTransaction = 256

    /// Credit from a `WorkerReady` or a save: the worker may be sent that many more jobs.
    func addCredit(_ credit: UInt32, to peer: Data) {
        // Credit adds up; a worker holds at most 1,024 jobs it has not finished (a huge credit is a bug or an
        // attack, not a request).
        if let held = workers[peer]?.credit, workers[peer]?.leaving == false {
            workers[peer]?.credit = UInt32(min(UInt64(held) + UInt64(credit), 1024))
        }
        needsDispatch = true
    }

    /// Takes the credit of each worker that has some, up to one claim's worth, for claims handed to the writer.
    func takeCredit() -> [QueuedCommit.Claim] {
        var claims: [QueuedCommit.Claim] = []
        var taken: Set<Data> = []
        var random = SystemRandomNumberGenerator()
        while let peer = workers.nextWithCredit(excluding: taken), let worker = workers[peer] {
            taken.insert(peer)
            let wanted = min(Int(worker.credit), Self.claimsPerTransaction)
            workers[peer]?.credit -= UInt32(wanted)
            claims.append(
                QueuedCommit.Claim(
                    peer: peer, worker: worker,
                    request: ClaimRequest(
                        worker: worker.id, kinds: worker.jobKinds,
                        queues: JobQueue.claimOrder(worker.queues, weights: worker.queueWeights, using: &random),
                        limit: wanted,
                        runLimits: configuration.runLimits)))
        }
        return claims
    }

    /// Gives back credit a claim did not use, unless the worker left (or registered anew) meanwhile.
    func giveBack(_ credit: Int, to peer: Data, of worker: WorkerRecord) {
        if credit > 0, workers[peer]?.id == worker.id, workers[peer]?.leaving == false {
            workers[peer]?.credit += UInt32(credit)
        }
    }
}
