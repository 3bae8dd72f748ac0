import Foundation
import GRDB
import TributaryCore
import TributaryProtocol

/// What became of a save sent to the root.
public enum SaveOutcome: Sendable {
    /// Merged and committed as `seq`; `events` is what to publish on the feed. `resolved` holds the stored rows of
    /// the objects whose conflicts the merge policy resolved.
    case committed(
        seq: UInt64, events: CommitEvents, remaps: [Tributary_V1_IDRemap], resolved: [Tributary_V1_EntityBatch])
    /// Committed, but changed nothing in the store, so no sequence number was used. Inserts may still have
    /// merged into existing objects (find-or-create of objects that exist): `remaps` says which.
    case committedEmpty(remaps: [Tributary_V1_IDRemap], resolved: [Tributary_V1_EntityBatch])
    /// This (job, batch) had been applied before; nothing was applied again.
    case duplicate(seq: UInt64)
    /// A context's save whose id (`SaveRequest.saveID`) the store committed before: nothing was applied again,
    /// and this is the first answer it was given.
    case answeredBefore(seq: UInt64, remaps: [Tributary_V1_IDRemap], resolved: [Tributary_V1_EntityBatch])

    /// Whether nothing was applied because it had been before.
    public var isDuplicate: Bool {
        switch self {
        case .duplicate, .answeredBefore: true
        case .committed, .committedEmpty: false
        }
    }
}

/// A save applied by a group commit: what became of it, and its job's progress afterwards (for the `$jobs`
/// topic; nil for a save outside a job or one applied before).
public struct AppliedSave: Sendable {
    /// What became of the save.
    public let outcome: SaveOutcome
    /// Its job's progress after it, for the `$jobs` topic; nil outside a job or for a save applied before.
    public let progress: JobProgress?
    /// A batch change's selection: the objects it changed. Nil for other saves, and for a job's batch change
    /// answered as a duplicate (its job's history keeps no ids).
    public var selection: BatchSelection? = nil
    /// What the save adds to its batch's counters, written once per batch at the end of the group.
    var batchProgress: BatchProgress? = nil
}

/// The objects a batch change selected and changed in its commit.
public struct BatchSelection: Sendable {
    /// Their ids, 16 bytes each, in id order.
    public let ids: Data
    /// More objects matched than the commit took; the next request goes on after the last of ``ids``.
    public let more: Bool
}

/// Saves and claims that join a group commit while it is applied (`queueGroupCommit(_:thenClaim:joining:)`).
public struct GroupCommitAddition: Sendable {
    /// Saves to apply after the commit's own, each with the id of the worker that sent it.
    public var saves: [(save: SaveRequest, worker: String)]
    /// Claims to answer after the commit's own.
    public var claims: [ClaimRequest]

    /// An addition of `saves` and `claims`; none by default (nothing more joins).
    public init(saves: [(save: SaveRequest, worker: String)] = [], claims: [ClaimRequest] = []) {
        self.saves = saves
        self.claims = claims
    }

    var isEmpty: Bool { saves.isEmpty && claims.isEmpty }
}

/// What a group commit with claims did: one result per save and one per claim, in the order given.
public struct GroupCommitResult: Sendable {
    /// A result per save, in the order given (the joined ones after).
    public let saves: [Result<AppliedSave, any Error>]
    /// The jobs leased per claim, in the order given (the joined ones after).
    public let claims: [Result<[ClaimedJob], any Error>]
    /// When the writer began the commit: its time on the store runs from here to its answer, whatever ran on the
    /// writer before it (a fold of the inverse index, say).
    public let started: ContinuousClock.Instant
    /// Jobs waiting for the jobs and batches these saves finished that a failed parent settled (dead or
    /// cancelled) in the same transaction.
    public var settled: [JobEnding] = []
}

/// Rows and jobs done, added to a batch's counters.
struct BatchProgress: Sendable {
    let batch: String
    var rows: Int64
    var jobs: Int64

    /// Adds another save's progress, saturating (each save's may be up to 2^53, and a group has many).
    mutating func add(_ other: BatchProgress) {
        rows = Self.saturating(rows, other.rows)
        jobs = Self.saturating(jobs, other.jobs)
    }

    private static func saturating(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : sum
    }
}

/// A save the root refused because the sender's job attempt no longer holds the job.
public struct LeaseError: Error, CustomStringConvertible, Sendable {
    /// The job the save was for.
    public let jobID: Int64
    /// Why the save was refused.
    public let message: String
    /// The store has no such job (it was deleted, or never existed).
    public let isUnknownJob: Bool
    /// The batch index skipped ahead of the job's committed batches.
    public var isOutOfOrder = false
    /// The job was cancelled.
    public var isCancelled = false
    public var description: String { message }
}

extension GroupCommitter {
    /// Merges a worker's change set and records the job's progress (or completion) in one transaction.
    /// - Throws: ``LeaseError`` when the job is unknown or its lease belongs to another attempt or worker;
    ///   ``StoreError`` when the change set does not fit the model or the store's constraints.
    package func applySave(_ save: SaveRequest, from worker: String) async throws -> SaveOutcome {
        try await applySaves([(save, worker)])[0].get().outcome
    }

    /// Group commit: applies several saves in one transaction (one WAL commit), each in a savepoint of its own,
    /// so a save that fails is rolled back alone and the others still commit.
    /// - Returns: one result per save, in order; sequence numbers follow that order.
    package func applySaves(_ saves: [(save: SaveRequest, worker: String)]) async throws
        -> [Result<AppliedSave, any Error>]
    {
        try await pool.writeWithoutTransaction { db in
            defer { self.afterCommit(db) }
            return try self.groupTransaction(db) { isolated in
                var settled: [JobEnding] = []
                return try self.applySaves(saves, in: db, isolated: isolated, settled: &settled)
            }
        }
    }

    /// What follows a commit on the writer's connection once it is answered: a fold of the inverse index when due,
    /// and the checkpoint that starts the WAL over when due (``WALRestart``).
    func afterCommit(_ db: Database) {
        foldInverseIndexIfDue(db)
        writer.walRestart.checkpointIfDue(db)
    }

    /// Folds the inverse index's recent entries into its large half, in a transaction of its own, when its
    /// schedule says so (``InverseFoldSchedule``). A fold that fails (a full disk, say) changes nothing and is tried
    /// again after as many changes more: both halves stay exact meanwhile, and readers read both. On this path
    /// (``applySaves(_:)``: in-process saves, the bench) the caller's await includes the fold.
    func foldInverseIndexIfDue(_ db: Database) {
        guard writer.inverseFold.isDue(db) else { return }
        defer { writer.inverseFold.folded(db) }
        try? writer.statements.transaction(db) { try InverseIndex.fold(model, in: db) }
    }

    /// A group commit's transaction: first with every save applied straight into it; when one of them fails, that
    /// transaction is rolled back and the group applied again with each save in a savepoint of its own, so that its
    /// failure undoes it alone.
    ///
    /// A savepoint copies every page a save touches to SQLite's statement journal (a temporary file) before
    /// changing it, and the saves of a group touch the same index pages, each copying them again: under bulk writes
    /// that copying would be a large share of the writer's work. Saves rarely fail, and one that does costs its
    /// group a second pass.
    func groupTransaction<T>(_ db: Database, _ body: (_ isolated: Bool) throws -> T) throws -> T {
        let merger = writer.merger
        do {
            let value = try groupTransactionAttempts(db, body)
            merger.knownKeys.transactionCommitted()
            return value
        } catch {
            merger.transactionRolledBack()
            throw error
        }
    }

    private func groupTransactionAttempts<T>(_ db: Database, _ body: (_ isolated: Bool) throws -> T) throws -> T {
        do {
            return try writer.statements.transaction(db) { try body(false) }
        } catch is SaveFailedUnisolated {
            writer.merger.transactionRolledBack()
            return try writer.statements.transaction(db) { try body(true) }
        }
    }

    /// A save of a group applied without a savepoint failed: the group is applied again with savepoints.
    struct SaveFailedUnisolated: Error {}

    /// Queues a group commit, then claims, as one transaction on the writer, and returns at once: the saves that
    /// finish jobs and the leases of the next ones commit together. Writes run in the order they are queued, so a
    /// later write sees this one's effects. The result has one entry per save and one per claim, in order; a claim
    /// that fails leaves the others standing, and a failure of the whole transaction (the commit itself, say) comes
    /// back as every save's and claim's error.
    ///
    /// - Parameters:
    ///   - saves: the saves to apply, in order, each with the id of the worker that sent it ("" for a context's
    ///     save outside any job).
    ///   - claims: the claims to answer once the saves are applied.
    ///   - joining: asked on the writer's thread, once the saves are applied and before the claims, for work that
    ///     gathered meanwhile; what it returns joins this transaction (its saves applied after the others, its
    ///     claims after the others), and it is asked again until it returns nothing, up to
    ///     ``maximumJoiningRounds`` times. The result then holds the joined saves after the given ones, and the
    ///     joined claims after the given ones, in the order joined. A save that arrives while a commit is applied
    ///     rides in it rather than making a commit of its own, which costs the store twice as much per row.
    package func queueGroupCommit(
        _ saves: [(save: SaveRequest, worker: String)], thenClaim claims: [ClaimRequest],
        joining: (@Sendable () -> GroupCommitAddition)? = nil
    ) -> PendingWrite<GroupCommitResult> {
        let pending = PendingWrite<GroupCommitResult>()
        pool.asyncWriteWithoutTransaction { db in
            self.groupCommit(saves, thenClaim: claims, joining: joining, in: db, into: pending)
        }
        return pending
    }

    /// The group commit's transaction, on the writer's connection; fulfils `pending` right after its COMMIT (or its
    /// failure), then runs what is due after it (``afterCommit(_:)``).
    private func groupCommit(
        _ saves: [(save: SaveRequest, worker: String)], thenClaim claims: [ClaimRequest],
        joining: (@Sendable () -> GroupCommitAddition)?, in db: Database, into pending: PendingWrite<GroupCommitResult>
    ) {
        let started = ContinuousClock.now
        // Everything this transaction took so far: a retry with savepoints applies it all again.
        var saves = saves
        var claims = claims
        do {
            pending.fulfil(
                try groupTransaction(db) { isolated in
                    var settled: [JobEnding] = []
                    var applied = try applySaves(saves, in: db, isolated: isolated, settled: &settled)
                    for _ in 0..<Self.maximumJoiningRounds {
                        guard let joined = joining?(), !joined.isEmpty else { break }
                        saves += joined.saves
                        claims += joined.claims
                        applied += try applySaves(joined.saves, in: db, isolated: isolated, settled: &settled)
                    }
                    let claimed = claimSpread(claims, in: db)
                    return GroupCommitResult(saves: applied, claims: claimed, started: started, settled: settled)
                })
        } catch {
            pending.fulfil(
                GroupCommitResult(
                    saves: saves.map { _ in .failure(error) }, claims: claims.map { _ in .failure(error) },
                    started: started))
        }
        // After the answer: the saves' acks do not wait for a fold or a checkpoint (the next write does).
        afterCommit(db)
    }

    /// How many times a group commit asks for work that gathered while it was applied (each round's saves are
    /// applied before it asks again); the row budget of the asker bounds it too.
    package static let maximumJoiningRounds = 4

    /// The group commit's work inside the writer's transaction. Each batch's counters are written once, after
    /// the saves, with what the saves that applied added to them.
    /// - Parameter isolated: each save with changes in a savepoint; otherwise straight into the transaction, and
    ///   the first failure throws ``SaveFailedUnisolated`` (see ``groupTransaction(_:_:)``).
    /// - Throws: when the counters cannot be written (the transaction then fails as a whole).
    /// - Parameter settled: gains the jobs that the finished jobs and batches settled (dead or cancelled).
    func applySaves(
        _ saves: [(save: SaveRequest, worker: String)], in db: Database, isolated: Bool = true,
        settled: inout [JobEnding]
    ) throws -> [Result<AppliedSave, any Error>] {
        var results: [Result<AppliedSave, any Error>] = []
        results.reserveCapacity(saves.count)
        var batches: [BatchProgress] = []
        let batchable = Self.batchable(saves)
        let leases = try jobs.leaseRows(
            ofJobs: saves.indices.filter { batchable[$0] }.map { Int64(saves[$0].save.jobID) }, in: db)
        var held: [SaveRequest] = []
        // Without savepoints, the join rows of all the group's change sets are written together, sorted, after the
        // last (see ``JoinRows``); with them, each change set writes its own inside its savepoint.
        writer.merger.defersJoinRows = !isolated
        defer { writer.merger.defersJoinRows = false }
        for (index, (save, worker)) in saves.enumerated() {
            let result = Result {
                if batchable[index] {
                    return try Self.applyBatched(
                        save, from: worker, lease: leases[Int64(save.jobID)], held: &held, in: db, writer: writer,
                        model: model)
                }
                // A save without changes writes one row, its job's, which is atomic on its own; a save with changes
                // gets a savepoint, so that its failure undoes it alone.
                if (save.changes.batches.isEmpty && save.batchChange == nil) || !isolated {
                    try writer.statements.requireTransaction(db)
                    return try Self.apply(save, from: worker, in: db, writer: writer, model: model)
                }
                return try writer.statements.savepoint(db) {
                    try Self.apply(save, from: worker, in: db, writer: writer, model: model)
                }
            }
            if case .failure = result {
                // Whatever failed after the merge (a savepoint undoes the whole save), what it learned is gone. The
                // join rows gathered stay: they are the earlier saves' (a failed merge drops what it gathered, and
                // a save with changes that fails without savepoints rolls the whole transaction back).
                writer.merger.knownKeys.transactionRolledBack()
                if !isolated && (!save.changes.batches.isEmpty || save.batchChange != nil) {
                    throw SaveFailedUnisolated()
                }
            }
            if case .success(let applied) = result, let progress = applied.batchProgress {
                if let index = batches.firstIndex(where: { $0.batch == progress.batch }) {
                    batches[index].add(progress)
                } else {
                    batches.append(progress)
                }
            }
            results.append(result)
        }
        if !isolated {
            do {
                try writer.merger.writeGatheredJoinRows(in: db)
            } catch {
                // Applied again with savepoints, the change set at fault fails alone.
                throw SaveFailedUnisolated()
            }
        }
        // Their jobs are named by no other save of the group: writing them last changes nothing the others see.
        try JobStore.writeProgress(of: held, now: Date().timeIntervalSince1970, in: db, statements: writer.statements)
        if !batches.isEmpty {
            try writer.statements.requireTransaction(db)
            try JobStore.record(batches, in: db, statements: writer.statements)
            // A batch whose last job this finished pushes its callback, and the jobs waiting for what finished
            // are settled, in the same transaction.
            let completed = zip(saves, results).compactMap { pair, result -> Int64? in
                guard case .success(let applied) = result, (applied.batchProgress?.jobs ?? 0) > 0 else { return nil }
                return Int64(pair.save.jobID)
            }
            settled += try JobStore.finished(
                jobs: completed, batches: batches.lazy.filter { $0.jobs > 0 }.map(\.batch),
                now: Date().timeIntervalSince1970, in: db)
        }
        return results
    }

    package static func apply(
        _ save: SaveRequest, from worker: String, in db: Database, writer: WriterState, model: Model
    ) throws -> AppliedSave {
        let jobID = Int64(save.jobID)
        let statements = writer.statements
        var lease: JobStore.HeldLease?
        if jobID != 0 {
            switch try checkLease(db, statements, save: save, jobID: jobID, worker: worker) {
            case .applied(let outcome): return AppliedSave(outcome: outcome, progress: nil)
            case .held(let held): lease = held
            }
        } else if let saveID = save.saveID,
            let earlier = try ContextSaveLog.earlierAnswer(
                of: saveID, now: Date().timeIntervalSince1970, in: db, statements: statements)
        {
            return earlier
        }
        var save = save
        var selection: BatchSelection?
        if let change = save.batchChange {
            // The objects it names, selected in this transaction, become its change set.
            let expanded = try BatchChangeExpansion.expand(change, model: model, in: db)
            save.changes = expanded.changes
            selection = BatchSelection(ids: expanded.ids, more: expanded.more)
        }
        // Every object the save writes gets the commit's sequence number as its version.
        let seq = save.changes.batches.isEmpty ? 0 : try lastSequenceNumber(db, statements) + 1
        let result: MergeResult
        if save.changes.batches.isEmpty {
            // Nothing to merge (a job's completion, say): only the merge policy is checked, as a merge would.
            _ = try MergePolicy(wire: save.changes.mergePolicy)
            result = MergeResult()
        } else {
            result = try writer.merger.apply(save.changes, version: seq, in: db)
        }
        var resolved: [Tributary_V1_EntityBatch] = []
        for (name, ids) in result.resolved.sorted(by: { $0.key < $1.key }) {
            guard let entity = model.entity(named: name) else { continue }
            var batch = try ObjectRows.read(entity, ids: ids, in: db)
            batch.operation = .update
            if !batch.ids.isEmpty { resolved.append(batch) }
        }
        let remaps = result.remaps.map { entity, pair in
            Tributary_V1_IDRemap.with {
                $0.entity = entity
                $0.fromIds = pair.from
                $0.toIds = pair.to
            }
        }
        var outcome = SaveOutcome.committedEmpty(remaps: remaps, resolved: resolved)
        let now = Date().timeIntervalSince1970
        if result.entities.contains(where: { !$0.changes.isEmpty }) {
            let origin = Tributary_V1_Origin.with {
                $0.workerID = worker
                $0.jobID = UInt64(save.jobID)
                $0.attempt = UInt32(clamping: save.attempt)
                $0.batchIndex = UInt32(clamping: save.batchIndex)
            }
            let events = try CommitEvents.make(
                seq: seq, epoch: writer.epoch, at: now, origin: origin, changeSet: save.changes, result: result,
                resolved: resolved,
                model: model)
            let insert = try statements.statement(
                db,
                """
                INSERT INTO tributary_history (seq, job_id, attempt, batch_index, worker, committed_at, record)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """)
            insert.bind(1, Int64(seq))
            if jobID == 0 { insert.bindNull(2) } else { insert.bind(2, jobID) }
            insert.bind(3, Int64(save.attempt))
            insert.bind(4, Int64(save.batchIndex))
            insert.bind(5, worker)
            insert.bind(6, now)
            insert.bind(7, bytes: events.record)
            try insert.execute()
            // The run's epoch begins at its first commit, in the same transaction (a no-op after that one).
            let epoch = try statements.statement(
                db, "INSERT OR IGNORE INTO tributary_epochs (first_seq, epoch) VALUES (?, ?)")
            epoch.bind(1, Int64(seq))
            epoch.bind(2, Int64(writer.epoch))
            try epoch.execute()
            outcome = .committed(seq: seq, events: events, remaps: remaps, resolved: resolved)
        }
        if let saveID = save.saveID {
            try ContextSaveLog.record(saveID, outcome, selection: selection, at: now, in: db, statements: statements)
        }
        guard jobID != 0, let lease else { return AppliedSave(outcome: outcome, progress: nil, selection: selection) }
        try JobStore.writeProgress(of: [save], now: now, in: db, statements: statements)
        var applied = applied(save, outcome, lease: lease)
        applied.selection = selection
        return applied
    }

    /// The last commit's seq (as ``FeedStore/lastSequenceNumber(_:)`` reads it), through the writer's prepared
    /// statement: read for every save that changes something.
    private static func lastSequenceNumber(_ db: Database, _ statements: WriterStatements) throws -> UInt64 {
        let select = try statements.statement(db, FeedStore.lastSequenceNumberSQL)
        defer { select.reset() }
        return try select.step() ? UInt64(max(0, select.int64(column: 0))) : 0
    }

    private enum LeaseCheck {
        /// The batch was applied before: answer with this.
        case applied(SaveOutcome)
        /// The save's attempt holds the job, of this batch.
        case held(JobStore.HeldLease)
    }

    /// Checks that the save's attempt holds the job, or finds that the batch was applied before.
    private static func checkLease(
        _ db: Database, _ statements: WriterStatements, save: SaveRequest, jobID: Int64, worker: String
    ) throws -> LeaseCheck {
        let row = try JobStore.leaseRow(ofJob: jobID, in: db, statements: statements)
        let verdict = JobStore.leaseVerdict(row, save: save, jobID: jobID, worker: worker)
        switch verdict {
        case .held(let held): return .held(held)
        case .refused(let error): throw error
        case .appliedBefore:
            // Answered with its sequence number, or 0 when it changed nothing or its history was pruned.
            let history = try statements.statement(
                db, "SELECT seq FROM tributary_history WHERE job_id = ? AND batch_index = ?")
            history.bind(1, jobID)
            history.bind(2, Int64(save.batchIndex))
            defer { history.reset() }
            return .applied(.duplicate(seq: try history.step() ? UInt64(max(0, history.int64(column: 0))) : 0))
        }
    }

    /// The job's progress and counters after a save its attempt held: what ``AppliedSave`` carries for it.
    static func applied(_ save: SaveRequest, _ outcome: SaveOutcome, lease: JobStore.HeldLease) -> AppliedSave {
        let progress = JobProgress(
            id: Int64(save.jobID), batch: lease.batch, state: save.completesJob ? .done : .running,
            done: save.progressDone, total: lease.total, attempt: Int(save.attempt))
        return AppliedSave(
            outcome: outcome, progress: progress,
            batchProgress: BatchProgress(
                batch: lease.batch, rows: Int64(save.progressDone) - lease.done, jobs: save.completesJob ? 1 : 0))
    }
}
