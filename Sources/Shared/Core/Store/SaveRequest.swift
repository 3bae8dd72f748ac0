import Foundation
import TributaryProtocol

/// One save as the root store applies it: which job's batch (and under which attempt's lease), the job's progress
/// once it commits, whether it completes the job, and its changes.
///
/// The changes stay the wire's column-wise `ChangeSet`, as do their parts in a `SaveOutcome` (remaps, resolved
/// objects): the merger reads them column by column, and a copy into other types would cost a copy of every
/// value for nothing. Everything else about a save is in domain types; the router converts `SaveChanges` here.
public struct SaveRequest: Sendable {
    /// The job the save belongs to; 0 for none (a save from a context outside any job).
    public var jobID: Int64
    /// The attempt whose lease the save is under; a save of an attempt that no longer holds it is refused.
    public var attempt: Int
    /// 0, 1, 2, … within the job; each (job, batch) applies at most once.
    public var batchIndex: Int
    /// The job's progress after this batch.
    public var progressDone: UInt64
    /// The job is done once this save commits.
    public var completesJob: Bool
    /// The objects inserted, updated and deleted, column-wise, with the context's merge policy.
    public var changes: Tributary_V1_ChangeSet
    /// For a context's save outside any job: the 16 bytes its sender made for it, the same on each retry. The root
    /// records it with the commit and answers it again with the first answer rather than applying it twice.
    public var saveID: Data?
    /// A change to the objects that match a predicate, made in the writer (Core Data's batch update and delete
    /// requests), instead of ``changes``.
    public var batchChange: Tributary_V1_BatchChange?

    /// A save of `changes`; without a job (``jobID`` 0), one from a context outside any job.
    public init(
        jobID: Int64 = 0, attempt: Int = 0, batchIndex: Int = 0, progressDone: UInt64 = 0, completesJob: Bool = false,
        changes: Tributary_V1_ChangeSet, saveID: Data? = nil, batchChange: Tributary_V1_BatchChange? = nil
    ) {
        self.jobID = jobID
        self.attempt = attempt
        self.batchIndex = batchIndex
        self.progressDone = progressDone
        self.completesJob = completesJob
        self.changes = changes
        self.saveID = saveID
        self.batchChange = batchChange
    }

    /// The save a `SaveChanges` message carries (its job id checked to fit `Int64` by the router first).
    public init(_ wire: Tributary_V1_SaveChanges) {
        self.init(
            jobID: Int64(clamping: wire.jobID), attempt: Int(wire.attempt), batchIndex: Int(wire.batchIndex),
            progressDone: wire.progressDone, completesJob: wire.completesJob, changes: wire.changes,
            saveID: wire.saveID.isEmpty ? nil : wire.saveID, batchChange: wire.hasBatchChange ? wire.batchChange : nil)
    }
}
