import Foundation

/// A write queued on the store's writer and not answered yet. Writes run in the order queued and are answered in
/// that order.
enum QueuedWrite {
    case groupCommit(QueuedCommit)
    case push(QueuedPush)

    /// Whether the writer has run it (it can be answered without waiting).
    var isWritten: Bool {
        switch self {
        case .groupCommit(let commit): commit.write.result != nil
        case .push(let push): push.write.result != nil
        }
    }

    /// Waits until the writer has run it.
    func written() async {
        switch self {
        case .groupCommit(let commit): _ = await commit.write.value
        case .push(let push): _ = await push.write.value
        }
    }
}

/// A group commit: what to answer once it is written.
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

/// A client's push: whom to answer once its jobs are enqueued.
struct QueuedPush {
    let peer: Data
    let requestID: UInt64
    let batch: String
    let write: PendingWrite<Result<PushedJobs, any Error>>
}
