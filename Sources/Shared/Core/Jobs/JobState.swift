/// Where a job is in the coordinator's queue.
public enum JobState: String, Sendable, Hashable, CaseIterable {
    /// Waiting for its parent jobs or batches (dependencies) to be done; queued in the transaction that commits the
    /// last one's completion.
    case waiting
    /// Waiting to be claimed (also while waiting for a retry or its `run_at`).
    case queued
    /// Leased to a worker's attempt.
    case running
    /// Completed: its last batch committed with the completion.
    case done
    /// Failed permanently, or on its last attempt; kept until retried or deleted.
    case dead
    /// Cancelled before it finished; the batches it committed stay.
    case cancelled

    /// Whether the job has finished: done, dead or cancelled (a dead job may still be retried).
    public var isFinished: Bool { self == .done || self == .dead || self == .cancelled }

    /// Every state's name, sorted, for messages that list them.
    public static let names = allCases.map(\.rawValue).sorted()
}
