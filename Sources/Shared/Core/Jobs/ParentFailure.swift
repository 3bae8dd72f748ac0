/// What becomes of a job waiting for parents (``JobSpec/afterJobs``, ``JobSpec/afterBatches``) when one of them
/// dies or is cancelled.
public enum ParentFailure: String, Sendable, CaseIterable {
    /// The job dies, naming the parent (the default; Sidekiq's and BullMQ's `failParentOnFailure` in reverse).
    case fail
    /// The job is cancelled.
    case cancel
    /// The job runs once every parent has finished, however it finished.
    case run

    /// Every policy's name, for messages that list them.
    public static let names = allCases.map(\.rawValue)
}
