import Foundation

/// A group commit queued on the store's writer and not answered yet: what to answer once it is written.
struct QueuedCommit {
    /// Jobs leased to a worker in the commit's transaction, for the credit taken from it.
    struct Claim {
        let peer: Data
        let worker: WorkerRecord
        let request: ClaimRequest
    }

    let members: [SaveGroup.Member]
    let claims: [Claim]
    let write: PendingWrite<GroupCommitResult>
}
