import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TributaryCore
import TributaryProtocol

/// One attempt at one job inside a worker: the job's input, and the parent its contexts save through.
///
/// Each save becomes a `SaveChanges` with the job id, the attempt and the next batch index, so the root applies
/// it at most once and only while this attempt holds the job. ``complete(_:progress:)`` sends the last save with
/// the job's completion, which the root commits in the same transaction.
public final class JobRun: ChangeSetParent {
    /// The job's id in the coordinator's queue.
    public let jobID: UInt64
    /// The attempt's number, from 1: never given twice for one job, so it may run ahead of the attempts counted
    /// against the retry policy (an attempt handed back, or before a dead job's retry, is not counted).
    public let attempt: UInt32
    /// The job as pushed.
    public let spec: JobSpec
    /// Batches committed by earlier attempts: resume after them.
    public let committedBatches: UInt32
    /// The store's model.
    public let model: Model

    private struct Progress {
        var nextBatch: UInt32
        var done: UInt64 = 0
        var completes = false
        var completed = false
    }

    let connection: CoordinatorConnection
    private let logger: Logger
    private let progress: Mutex<Progress>
    /// ``running``, ``cancelledState`` or ``interruptedState``: one atomic, so that a handler that sees its job
    /// stopped also sees why.
    private let stopped = Atomic<UInt8>(JobRun.running)
    private static let running: UInt8 = 0
    private static let cancelledState: UInt8 = 1
    private static let interruptedState: UInt8 = 2
    /// Whether the worker may ask for another job when this one completes (not while it drains or stops).
    private let asksForNextJob: @Sendable () -> Bool
    private let askedForNextJob = Atomic<Bool>(false)

    /// Whether the save that completed the job asked for the job to take its slot; otherwise the worker asks
    /// when the job's task ends.
    var completionAskedForNextJob: Bool { askedForNextJob.load(ordering: .relaxed) }

    /// Whether the job was cancelled; handlers stop at their next batch boundary (``checkCancellation()``).
    public var isCancelled: Bool { stopped.load(ordering: .relaxed) != Self.running }

    /// Throws ``JobCancelled`` when the job was cancelled. Saves check it too.
    public func checkCancellation() throws {
        if isCancelled { throw JobCancelled(jobID: jobID) }
    }

    /// Marks the job cancelled (the coordinator said so), unless it was interrupted already.
    func cancel() {
        _ = stopped.compareExchange(expected: Self.running, desired: Self.cancelledState, ordering: .relaxed)
    }

    /// Whether the worker's shutdown timeout passed while the job ran: it is stopped as a cancelled one is, and the
    /// worker does not report it failed (its goodbye has the coordinator hand it back uncounted).
    var isInterrupted: Bool { stopped.load(ordering: .relaxed) == Self.interruptedState }

    /// Marks the job interrupted by the worker's stop, which stops its handler as a cancellation does.
    func interrupt() {
        stopped.store(Self.interruptedState, ordering: .relaxed)
    }

    /// - Parameters:
    ///   - asksForNextJob: asked when the completing save is sent; true puts a credit of 1 on it.
    ///   - logger: where a save that waits for the store is logged.
    init(
        assignment: Tributary_V1_JobAssignment, model: Model, connection: CoordinatorConnection,
        asksForNextJob: @escaping @Sendable () -> Bool = { false }, logger: Logger = Logger(label: "tributary.job")
    ) {
        self.logger = logger
        self.asksForNextJob = asksForNextJob
        jobID = assignment.jobID
        attempt = assignment.attempt
        spec = JobSpec(assignment.spec)
        committedBatches = assignment.committedBatches
        self.model = model
        self.connection = connection
        progress = Mutex(Progress(nextBatch: assignment.committedBatches))
    }

    /// A new slave context whose saves go to the root as this job's batches.
    public func makeContext(name: String? = nil) -> ObjectContext {
        ObjectContext(model: model, parent: self, name: name ?? "job-\(jobID)")
    }

    /// Saves `context` as the job's next batch, recording `progress` units done.
    ///
    /// The batch is sent even when the context has no changes: every batch takes a batch index, so a retried
    /// attempt resumes at the right place (`committedBatches` batches in).
    @discardableResult
    public func save(_ context: ObjectContext, progress done: UInt64) async throws -> SaveReceipt {
        progress.withLock { $0.done = done }
        return try await context.save(evenIfEmpty: true)
    }

    /// Saves `context` (even with no changes) as the job's last batch, completing the job in the same commit.
    @discardableResult
    public func complete(_ context: ObjectContext, progress done: UInt64) async throws -> SaveReceipt {
        try await completing(progress: done) { try await context.save(evenIfEmpty: true) }
    }

    /// Completes the job with no changes of its own (its work is elsewhere, or its last batch was saved
    /// already): the completion commits like a save, without a context to build one.
    @discardableResult
    public func complete(progress done: UInt64) async throws -> SaveReceipt {
        try await completing(progress: done) { try await save(Tributary_V1_ChangeSet()) }
    }

    /// Sends `changes` as the job's next batch, recording `progress` units done (a handler that builds its change
    /// sets without a context: the import).
    @discardableResult
    package func save(_ changes: Tributary_V1_ChangeSet, progress done: UInt64) async throws -> SaveReceipt {
        progress.withLock { $0.done = done }
        return try await save(changes)
    }

    /// Sends `changes` as the job's last batch, completing the job in the same commit.
    @discardableResult
    package func complete(_ changes: Tributary_V1_ChangeSet, progress done: UInt64) async throws -> SaveReceipt {
        try await completing(progress: done) { try await save(changes) }
    }

    /// Sends the save `body` makes as the job's completion, recording `done` units of progress.
    private func completing(progress done: UInt64, _ body: () async throws -> SaveReceipt) async throws
        -> SaveReceipt
    {
        progress.withLock {
            $0.done = done
            $0.completes = true
        }
        let receipt = try await body()
        progress.withLock { $0.completed = true }
        return receipt
    }

    /// Whether ``complete(_:progress:)`` or ``complete(progress:)`` succeeded.
    public var isCompleted: Bool { progress.withLock { $0.completed } }

    public func save(_ changes: Tributary_V1_ChangeSet) async throws -> SaveReceipt {
        try await send { $0.changes = changes }
    }

    /// No: a job's saves are sent from its task, where its cancellation and the store's back-pressure reach them.
    public var savesInBlocks: Bool { false }

    /// Refused: a job's saves are sent from its task (``save(_:progress:)``, `try await context.save()`), where its
    /// cancellation and the store's back-pressure reach them; a save blocking a context's queue would escape both.
    public func saveAndWait(_ changes: Tributary_V1_ChangeSet, id: UUID) throws -> SaveReceipt {
        throw ContextError(
            .unsupported,
            "job \(jobID): a job's context saves with `try await run.save(context, progress:)` or "
                + "`try await context.save()`, not with `try context.save()` inside a block")
    }

    /// Runs a batch change in the root writer as the job's next batch: applied once, as the job's saves are.
    public func execute(_ change: Tributary_V1_BatchChange, id: UUID) async throws -> SaveReceipt {
        try await send { $0.batchChange = change }
    }

    /// The refusals of a save that apply nothing of it: its batch index stays unused.
    static let refusedWhole: Set<Tributary_V1_ErrorCode> = [
        .constraintViolation, .unknownEntity, .unknownAttribute, .wrongType, .invalidPredicate, .tooLarge,
    ]

    /// Sends the job's next batch, which `fill` gives its change set or batch change.
    private func send(_ fill: (inout Tributary_V1_SaveChanges) -> Void) async throws -> SaveReceipt {
        try checkCancellation()
        let message = progress.withLock { progress -> Tributary_V1_SaveChanges in
            defer { progress.nextBatch += 1 }
            return Tributary_V1_SaveChanges.with {
                $0.jobID = jobID
                $0.attempt = attempt
                $0.batchIndex = progress.nextBatch
                fill(&$0)
                $0.progressDone = progress.done
                $0.completesJob = progress.completes
                // Once per job, even when a refused completion is sent again.
                if progress.completes, asksForNextJob(),
                    !askedForNextJob.exchange(true, ordering: .relaxed)
                {
                    $0.credit = 1
                }
            }
        }
        let reply: Tributary_V1_Envelope
        do {
            reply = try await requestWaitingForStore(message)
        } catch let error as ProtocolError where error.code == .shuttingDown && isInterrupted {
            // Given up at the worker's shutdown timeout: the job stops as a cancelled one does.
            throw JobCancelled(jobID: jobID)
        } catch let error as ProtocolError where error.code == .jobCancelled {
            cancel()
            throw JobCancelled(jobID: jobID)
        } catch let error as ProtocolError where error.code == .mergeConflict {
            // Refused whole: the batch index was not used, and the next save (after the handler refreshed its
            // objects or chose another merge policy) takes it.
            progress.withLock { if $0.nextBatch == message.batchIndex + 1 { $0.nextBatch = message.batchIndex } }
            throw MergeConflictError(conflicts: error.conflicts.map(MergeConflict.init(wire:)))
        } catch let error as ProtocolError where Self.refusedWhole.contains(error.code) {
            // Refused before anything was applied (a deny rule, a value that does not fit): the index is free for
            // the handler's next save.
            progress.withLock { if $0.nextBatch == message.batchIndex + 1 { $0.nextBatch = message.batchIndex } }
            throw error
        }
        guard case .saveAck(let ack) = reply.body else {
            throw ProtocolError(.unknownMessage, "the coordinator answered a save with something other than SaveAck")
        }
        return SaveReceipt(ack)
    }

    /// The first wait before a save refused with `STORE_UNWRITABLE` is sent again; each later wait doubles, up to
    /// ``longestStoreWait``.
    static let firstStoreWait: Duration = .milliseconds(100)
    static let longestStoreWait: Duration = .seconds(5)

    /// Sends `message` and returns the answer; while the store cannot be written (a full disk, a read-only
    /// filesystem: `STORE_UNWRITABLE`, nothing of the save applied), waits and sends it again, so that the job waits
    /// for the store rather than failing an attempt. Its lease holds meanwhile (the worker's heartbeats go on); a
    /// cancelled job or task stops waiting.
    private func requestWaitingForStore(_ message: Tributary_V1_SaveChanges) async throws -> Tributary_V1_Envelope {
        var message = message
        var wait = Self.firstStoreWait
        var waitingSince: ContinuousClock.Instant?
        while true {
            do {
                let reply = try await connection.request(
                    .saveChanges(message), timeout: .seconds(60), resendAs: .saveChanges(Self.sentAgain(message)))
                if let waitingSince {
                    logger.notice(
                        "the store took the job's save", metadata: metadata(waited: waitingSince.duration(to: .now)))
                }
                return reply
            } catch let error as ProtocolError where error.code == .storeUnwritable {
                if waitingSince == nil {
                    waitingSince = .now
                    var metadata = metadata(waited: .zero)
                    metadata["error"] = "\(error.message)"
                    logger.warning("the store cannot be written: the job's save waits", metadata: metadata)
                }
                // A worker told to stop does not wait for the store: the job ends with the error.
                if Task.isShuttingDownGracefully { throw error }
                // The coordinator counted the credit when it took the save.
                message.credit = 0
                try await Task.sleep(for: wait)
                try checkCancellation()
                wait = min(wait * 2, Self.longestStoreWait)
            }
        }
    }

    /// The save as the worker sends it again when the coordinator may have lost it (it forgot this worker:
    /// `CoordinatorConnection.resendPendingRequests()`): the same batch, which a coordinator that
    /// committed it answers as applied before, and one that voided the attempt refuses; without its credit, which
    /// the worker offers again itself once it registered anew.
    static func sentAgain(_ message: Tributary_V1_SaveChanges) -> Tributary_V1_SaveChanges {
        guard message.credit != 0 else { return message }
        var again = message
        again.credit = 0
        return again
    }

    private func metadata(waited: Duration) -> Logger.Metadata {
        ["job": "\(jobID)", "attempt": "\(attempt)", "waited_seconds": "\(Int(waited.components.seconds))"]
    }
}

extension JobRun {
    /// A fetch of one of the job's contexts: asked of the coordinator, which answers from a read connection.
    public func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply {
        try CoordinatorStore.fetch(request, over: connection)
    }

    /// An aggregate request of one of the job's contexts: asked of the coordinator, which answers from a read
    /// connection.
    public func aggregate(_ request: Tributary_V1_AggregateRequest) throws -> Tributary_V1_AggregateReply {
        try CoordinatorStore.aggregate(request, over: connection)
    }
}

/// A job stopped because it was cancelled; not a failure.
public struct JobCancelled: Error, CustomStringConvertible, Sendable {
    /// The cancelled job's id in the coordinator's queue.
    public let jobID: UInt64
    public var description: String { "job \(jobID) was cancelled" }
}
