import Foundation
import TributaryCore

/// A write queued on the store and not answered yet. Writes run in the order queued and are answered in that
/// order.
enum QueuedWrite: Sendable {
    case groupCommit(QueuedCommit)
    case push(QueuedPush)
    /// Any other write (``StoreWrite``): its caller awaits its result; the router answers nothing for it.
    case operation(name: String, written: PendingWrite<Duration>)

    /// Whether the store has run it.
    var isWritten: Bool {
        switch self {
        case .groupCommit(let commit): commit.write.result != nil
        case .push(let push): push.write.result != nil
        case .operation(_, let written): written.result != nil
        }
    }

    /// What goes on through the pipeline once the store has run it (at `writtenAt`), at `position` in the writer's
    /// order: what the router answers for a group commit or a push; nothing for an operation.
    func committed(at position: UInt64, writtenAt: ContinuousClock.Instant) -> CommittedWrite {
        switch self {
        case .groupCommit(let commit):
            CommittedWrite(
                position: position, answer: commit.write.result.map { .committed(commit, $0, writtenAt: writtenAt) },
                saves: commit.members.count)
        case .push(let push):
            CommittedWrite(position: position, answer: push.write.result.map { .pushed(push.request, $0) }, saves: 0)
        case .operation: CommittedWrite(position: position, answer: nil, saves: 0)
        }
    }

    /// Calls `body` once the store has run it (see ``PendingWrite/whenWritten(_:)``).
    func whenWritten(_ body: @escaping @Sendable () -> Void) {
        switch self {
        case .groupCommit(let commit): commit.write.whenWritten { _ in body() }
        case .push(let push): push.write.whenWritten { _ in body() }
        case .operation(_, let written): written.whenWritten { _ in body() }
        }
    }

    /// Waits until the store has run it.
    nonisolated(nonsending) func written() async {
        switch self {
        case .groupCommit(let commit): _ = await commit.write.value
        case .push(let push): _ = await push.write.value
        case .operation(_, let written): _ = await written.value
        }
    }
}

/// A finished write, for the router to answer: a group commit's saves and claims, or a push.
enum WriterAnswer: Sendable {
    case committed(QueuedCommit, GroupCommitResult, writtenAt: ContinuousClock.Instant)
    case pushed(QueuedPush.Request, Result<PushedJobs, any Error>)
}

/// A group commit: what to answer once it is written.
struct QueuedCommit: Sendable {
    /// Jobs to lease to a worker in the commit's transaction, for the credit the router took from it.
    struct Claim: Sendable {
        let peer: Data
        let worker: WorkerRecord
        var request: ClaimRequest
    }

    /// Tells the commit from others (see ``StoreWriter``'s joining).
    let id: UInt64
    /// Its saves: those it was queued with, then those that joined it while it was applied.
    var members: [SaveGroup.Member]
    /// Its claims: those it was queued with, then those that joined it.
    var claims: [Claim]
    /// How many of `members` joined it while it was applied.
    var joined = 0
    /// The rows the budget allowed it when it was queued (a commit that filled it measures the store's pace).
    let rowBudget: Int
    /// Whether other writes' time on the store was charged to its budget (then filling it measures nothing).
    var budgetCharged = false
    /// When it was queued on the store (for the time budget's pace).
    let queuedAt: ContinuousClock.Instant
    let write: PendingWrite<GroupCommitResult>
}

/// A client's push: whom to answer once its jobs are enqueued.
struct QueuedPush: Sendable {
    /// A push as the router hands it to the writer.
    struct Request: Sendable {
        let peer: Data
        let requestID: UInt64
        let batch: String
        let specs: [JobSpec]
        /// The batch's callback (``RootStore/pushCallbacks(ofFinished:now:in:)``), if the push sets one.
        var onComplete: JobSpec? = nil
    }

    let request: Request
    let write: PendingWrite<Result<PushedJobs, any Error>>
}
