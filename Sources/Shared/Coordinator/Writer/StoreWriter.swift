import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The store's writer: the one path by which anything is written to the store once it is open (group commits of
/// saves and claims, pushes, and every other write as a ``StoreWrite``), in the order handed over. The first stage of
/// the commit pipeline: what it committed goes on through the ``CommitPipeline`` to its answer.
///
/// The router hands it each message's saves and the claims for workers' credit (``enqueue(_:claims:moreToCome:)``),
/// pushes (``push(_:)``) and its own writes (``queue(_:)``), and never waits for a commit: every write runs on GRDB's
/// writer thread (transaction, commit, sync). While one group commit runs, the next gathers; as soon as the store has
/// written one, the next is queued (its saves in one transaction, a savepoint each only when one of them failed, and
/// its claims after them, so a completion and the lease of the job that takes its slot commit together), and the
/// finished one goes on through the pipeline, in order: the store works while the router answers. Saves and claims
/// handed over while a group commit is applied join it before its COMMIT, when it is the last write queued
/// (``join(commit:)``), rather than waiting for a commit of their own.
///
/// Each write takes the next position (from 1), which the pipeline carries to its answer; a read that must see the
/// saves before it waits for a ``barrier()`` to be answered.
///
/// Its state is behind one lock rather than in an actor: handing it saves costs the router no hop, and a finished
/// write is collected on GRDB's writer thread right after its commit (``PendingWrite/whenWritten(_:)``), which
/// queues the next group at once and hands the finished one to the pipeline. Nothing under the lock waits: queueing
/// a write on the store only schedules it. ``stop()`` writes what was handed over and then takes nothing more.
final class StoreWriter: Service, Sendable {
    /// The most saves that gather while the store is busy; the next message's saves wait for it.
    static let maximumPendingSaves = 1024

    /// The most writes queued on the store (pushes queue behind group commits); the next push waits.
    static let maximumQueuedWrites = 8

    private struct State: ~Copyable {
        /// Saves gathered for the next group commit.
        var pendingSaves = SaveGroup()
        /// Claims for the next group commit, one per worker (credit taken meanwhile adds to its claim, up to the
        /// worker's credit: at most 1,024 jobs).
        var pendingClaims: [QueuedCommit.Claim] = []
        /// Writes queued on the store and not collected yet, oldest first, with their positions.
        var queued: [(position: UInt64, write: QueuedWrite)] = []
        /// The position the next write queued takes.
        var nextPosition: UInt64 = 1
        /// Saves handed over so far (``barrier()``).
        var savesHandedOver = 0
        var stopped = false
        /// Callers waiting for room (too many saves gathered, or too many writes queued); woken by each write
        /// collected, and by ``stop()``.
        var waitingForRoom: [CheckedContinuation<Void, Never>] = []
        /// How many times writes were collected: a caller that found no room waits only if none was since.
        var collections = 0
        /// How many rows the next group commit takes.
        var budget: CommitBudget
        /// The id of the next group commit queued.
        var nextCommitID: UInt64 = 0

        /// Appends `write` to the queue at the next position.
        mutating func append(_ write: QueuedWrite) -> UInt64 {
            let position = nextPosition
            nextPosition += 1
            queued.append((position, write))
            return position
        }
    }

    private let store: RootStore
    private let logger: Logger
    /// Where committed writes go on to their answers.
    let pipeline: CommitPipeline
    private let state: Mutex<State>

    /// - Parameters:
    ///   - groupRows: the row budget of a group commit. Larger transactions write each index page once for more
    ///     rows (see docs/benchmarks.md, 'Import'); the budget bounds a commit's duration and memory.
    ///   - groupSeconds: the time budget of a group commit (see ``CommitBudget``); nil sets none.
    ///   - stages: what a commit passes through before its answer (``CommitStage``).
    ///   - answersWaiting: tells the router that answers wait (``CommitPipeline/takeAnswers()``); never waits.
    init(
        store: RootStore, logger: Logger, groupRows: Int = CoordinatorConfiguration.defaultCommitRows,
        groupSeconds: Double? = CoordinatorConfiguration.defaultCommitSeconds, stages: [any CommitStage] = [],
        answersWaiting: @escaping @Sendable () -> Void
    ) {
        self.store = store
        self.logger = logger
        pipeline = CommitPipeline(stages: stages, answersWaiting: answersWaiting)
        state = Mutex(State(budget: CommitBudget(rows: groupRows, seconds: groupSeconds)))
    }

    /// Runs until graceful shutdown, which in the coordinator's group comes after the router stopped the writer
    /// (``stop()``) and answered what was left; a writer still running is stopped then. Its answers are left to the
    /// router (cancelled, it may still be answering); the pipeline lets its waiters go when it stops.
    func run() async {
        try? await gracefulShutdown()
        await stop()
    }

    /// Gathers a message's saves and claims for the next group commit; when the store is idle, what gathered is
    /// queued on it at once. With `moreToCome` (the rest of a batch of messages is still to be handed over) it only
    /// gathers, unless a commit's rows gathered, so that a batch makes one commit. Waits while too many saves
    /// gathered behind a busy store, so a flood of saves slows its senders instead of growing; never for a commit
    /// otherwise.
    /// - Returns: false when the writer has stopped: nothing was taken (the saves are to be refused).
    nonisolated(nonsending) func enqueue(
        _ saves: [SaveGroup.Member], claims: [QueuedCommit.Claim], moreToCome: Bool = false
    ) async -> Bool {
        await whenThereIsRoom { state in
            // Nothing handed over takes no room (the router's hand-over at the end of a step, say).
            guard saves.isEmpty || state.pendingSaves.count < Self.maximumPendingSaves || state.queued.isEmpty else {
                return .noRoom
            }
            for save in saves { state.pendingSaves.append(save) }
            state.savesHandedOver += saves.count
            for claim in claims { Self.add(claim, to: &state) }
            guard state.queued.isEmpty else { return .taken([]) }
            if moreToCome && state.pendingSaves.rows < state.budget.next { return .taken([]) }
            return .taken(self.queuePending(&state))
        }
    }

    /// Queues a push behind the saves gathered before it (a push must not overtake them: one may finish a job
    /// whose unique key it reuses). Waits while the store has many writes queued.
    /// - Returns: false when the writer has stopped.
    nonisolated(nonsending) func push(_ push: QueuedPush.Request) async -> Bool {
        await whenThereIsRoom { state in
            // The gathered saves go first, as a write of their own.
            let writes = state.queued.count + (state.pendingSaves.isEmpty && state.pendingClaims.isEmpty ? 1 : 2)
            guard writes <= Self.maximumQueuedWrites || state.queued.isEmpty else { return .noRoom }
            let commit = self.queueAllPending(&state)
            let write = QueuedWrite.push(
                QueuedPush(
                    request: push,
                    write: self.store.saves.queuePush(push.specs, batch: push.batch, onComplete: push.onComplete)))
            _ = state.append(write)
            return .taken(commit + [write])
        }
    }

    /// Runs `write` on the store in a transaction of its own, queued behind the saves gathered before it and every
    /// write queued so far (as a push is), and returns its result once the pipeline released it. Waits while the
    /// store has many writes queued.
    /// - Throws: what the write threw (its transaction rolled back), or ``WriterStoppedError`` when the writer has
    ///   stopped.
    nonisolated(nonsending) func write<Output: Sendable>(_ write: StoreWrite<Output>) async throws -> Output {
        var queued: QueuedOperation<Output>?
        _ = await whenThereIsRoom { state in
            let writes = state.queued.count + (state.pendingSaves.isEmpty && state.pendingClaims.isEmpty ? 1 : 2)
            guard writes <= Self.maximumQueuedWrites || state.queued.isEmpty else { return .noRoom }
            let (operation, written) = self.queueOperation(write, in: &state)
            queued = operation
            return .taken(written)
        }
        guard let queued else { throw WriterStoppedError(write: write.name) }
        return try await queued.value
    }

    /// The most writes queued on the store for ``queue(_:)`` to take another: past it (a stalled disk and a client
    /// sending commands in a loop), the router's writes are refused rather than held without bound.
    static let maximumRouterQueuedWrites = 1_024

    /// Queues `write` at once, behind the saves gathered before it and every write queued so far: for the router,
    /// which never waits for the writer.
    /// - Returns: the write's position and its result to come.
    /// - Throws: ``WriterStoppedError`` when the writer has stopped; ``WriterBusyError`` when
    ///   ``maximumRouterQueuedWrites`` writes are queued.
    func queue<Output: Sendable>(_ write: StoreWrite<Output>) throws -> QueuedOperation<Output> {
        let taken = try state.withLock { state -> (QueuedOperation<Output>, [QueuedWrite]) in
            guard !state.stopped else { throw WriterStoppedError(write: write.name) }
            guard state.queued.count < Self.maximumRouterQueuedWrites else {
                throw WriterBusyError(write: write.name, queued: state.queued.count)
            }
            return queueOperation(write, in: &state)
        }
        follow(taken.1)
        return taken.0
    }

    /// Queues `write` behind what gathered (under the lock); the caller has the writes returned followed.
    private func queueOperation<Output: Sendable>(_ write: StoreWrite<Output>, in state: inout State)
        -> (QueuedOperation<Output>, [QueuedWrite])
    {
        let commit = queueAllPending(&state)
        let result = PendingWrite<Result<Output, any Error>>()
        let written = PendingWrite<Duration>()
        let store = self.store
        store.pool.asyncWriteWithoutTransaction { db in
            let started = ContinuousClock.now
            result.fulfil(
                Result {
                    try store.writer.statements.transaction(db, synced: write.synced) { try write.body(store, db) }
                })
            written.fulfil(started.duration(to: .now))
        }
        let queued = QueuedWrite.operation(name: write.name, written: written)
        let position = state.append(queued)
        return (
            QueuedOperation(name: write.name, position: position, result: result, pipeline: pipeline),
            commit + [queued]
        )
    }

    /// What a read that must see the saves handed over so far waits for (``CommitPipeline/waitUntilAnswered(_:)``):
    /// every save handed over and every write queued, answered. Queues nothing: the saves gathered go with the
    /// next group commit, as they would have.
    func barrier() -> WriterBarrier {
        state.withLock { state in
            WriterBarrier(saves: state.savesHandedOver, position: state.nextPosition - 1)
        }
    }

    /// Queues what gathered, even while the store is busy, and returns once every write handed over so far was
    /// released by the pipeline's stages. Saves handed over meanwhile are not waited for, so a stop ends even while
    /// workers go on saving.
    nonisolated(nonsending) func commitAll() async {
        let (queued, last) = state.withLock { state in (queueAllPending(&state), state.nextPosition - 1) }
        follow(queued)
        await pipeline.waitUntilReleased(last)
    }

    /// Commits what was handed over and returns every answer released and not taken yet, marked answered: for a
    /// caller that answers them itself (tests; the router takes them from the pipeline).
    nonisolated(nonsending) func flush() async -> [WriterAnswer] {
        await commitAll()
        return takeAnswers()
    }

    /// How many callers wait for room (for tests).
    var waitingForRoomCount: Int { state.withLock { $0.waitingForRoom.count } }

    /// How many writes are queued on the store and not collected yet (for tests).
    var queuedWriteCount: Int { state.withLock { $0.queued.count } }

    /// The commit budget as it stands: its pace and what other writes charged to the next commit.
    var commitBudget: CommitBudget { state.withLock { $0.budget } }

    /// The answers released since the last call, in the order the writes were queued, marked answered (for a
    /// caller without a router: tests).
    func takeAnswers() -> [WriterAnswer] {
        let taken = pipeline.takeAnswers()
        pipeline.answered(taken)
        return taken.compactMap(\.answer)
    }

    /// Commits what was handed over, then takes nothing more; returns once the pipeline released it (the answers
    /// wait in the pipeline). Saves and claims handed over afterwards are refused
    /// (``enqueue(_:claims:moreToCome:)`` returns false).
    nonisolated(nonsending) func stop() async {
        let waiting = state.withLock { state in
            state.stopped = true
            defer { state.waitingForRoom = [] }
            return state.waitingForRoom
        }
        for waiter in waiting { waiter.resume() }
        await commitAll()
    }

    /// What a caller did under the lock: found no room, or took its part (and queued these writes).
    private enum Take {
        case noRoom
        case taken([QueuedWrite])
    }

    /// Runs `take` under the lock once it finds room, then has the writes it queued followed.
    /// - Returns: false when the writer has stopped.
    private nonisolated(nonsending) func whenThereIsRoom(_ take: (inout State) -> Take) async -> Bool {
        while true {
            let (outcome, collections) = state.withLock { state -> (Take?, Int) in
                (state.stopped ? nil : take(&state), state.collections)
            }
            switch outcome {
            case .taken(let queued):
                follow(queued)
                return true
            case nil:
                return false
            case .noRoom:
                await waitForRoom(after: collections)
            }
        }
    }

    /// Waits until a write is collected or the writer stops; returns at once when either happened since the
    /// caller found no room (`collections` is what it saw then).
    private nonisolated(nonsending) func waitForRoom(after collections: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.stopped || state.collections != collections { return true }
                state.waitingForRoom.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    private static func add(_ claim: QueuedCommit.Claim, to state: inout State) {
        if let index = state.pendingClaims.firstIndex(where: {
            $0.peer == claim.peer && $0.worker.id == claim.worker.id
        }) {
            state.pendingClaims[index].request.limit += claim.request.limit
        } else {
            state.pendingClaims.append(claim)
        }
    }

    /// Queues every gathered save, as many group commits as the row budget makes.
    private func queueAllPending(_ state: inout State) -> [QueuedWrite] {
        var queued = queuePending(&state)
        while !state.pendingSaves.isEmpty { queued += queuePending(&state) }
        return queued
    }

    /// Queues the gathered saves, up to the row budget, and the claims on the store as one group commit (under the
    /// lock: queueing only schedules the write). The caller has it followed once the lock is released.
    /// - Returns: the write queued; none when nothing gathered.
    private func queuePending(_ state: inout State) -> [QueuedWrite] {
        guard !state.pendingSaves.isEmpty || !state.pendingClaims.isEmpty else { return [] }
        let (rowBudget, charged) = state.budget.take()
        let members = state.pendingSaves.take(rowBudget: rowBudget)
        let claims = state.pendingClaims
        state.pendingClaims = []
        let id = state.nextCommitID
        state.nextCommitID += 1
        let saves = members.map { ($0.save, $0.worker) }
        let requests = claims.map(\.request)
        let joining: @Sendable () -> GroupCommitAddition = { [self] in join(commit: id) }
        let write = QueuedWrite.groupCommit(
            QueuedCommit(
                id: id, members: members, claims: claims, rowBudget: rowBudget, budgetCharged: charged,
                queuedAt: .now, write: store.saves.queueGroupCommit(saves, thenClaim: requests, joining: joining)))
        _ = state.append(write)
        return [write]
    }

    /// The saves (up to the commit's row budget) and claims that gathered while group commit `id` was applied, for
    /// it to take into its transaction (called on the writer's thread, before its claims and COMMIT); recorded as
    /// its members, so that they are answered with it. Only the last write queued takes them: behind any other,
    /// they would overtake it (a push, say, queued after the commit and before them).
    ///
    /// A commit that holds one save costs the store about twice as much per row as one of several (each index page
    /// it touches is written for one save's rows); without joining, a save that comes in while a large commit is
    /// applied would be committed alone right after it (see docs/benchmarks.md, 'Import').
    private func join(commit id: UInt64) -> GroupCommitAddition {
        state.withLock { state in
            guard let last = state.queued.last, case .groupCommit(var commit) = last.write, commit.id == id else {
                return .init()
            }
            let rows = commit.members.reduce(0) { $0 + $1.rows }
            let members = state.pendingSaves.take(fitting: commit.rowBudget - rows)
            let claims = state.pendingClaims
            guard !members.isEmpty || !claims.isEmpty else { return .init() }
            state.pendingClaims = []
            commit.members += members
            commit.claims += claims
            commit.joined += members.count
            state.queued[state.queued.count - 1].write = .groupCommit(commit)
            return .init(saves: members.map { ($0.save, $0.worker) }, claims: claims.map(\.request))
        }
    }

    /// Records a group commit's pace for the time budget: it started when the store began it (not when it was
    /// queued, nor when the write before it was answered: the store may have folded its inverse index between them)
    /// and finished now (collection follows the commit on the writer's thread).
    /// Another write that saves gathered behind is charged to the next commit's budget: they waited for it.
    /// - Parameter describing: whether to describe it for the log (only when tracing).
    /// - Returns: what to log of it (at trace level, once the lock is released); nil for a push, or when not
    ///   `describing`.
    private static func measure(_ write: QueuedWrite, in state: inout State, describing: Bool) -> Logger.Metadata? {
        let now = ContinuousClock.now
        if case .operation(let name, let written) = write, let spent = written.result {
            if !state.pendingSaves.isEmpty { state.budget.charge(seconds: spent.seconds) }
            WriterMetrics.writeDuration(name).record(duration: spent)
            return nil
        }
        guard case .groupCommit(let commit) = write else { return nil }
        let started = commit.write.result?.started ?? commit.queuedAt
        let elapsed = started.duration(to: now).seconds
        let rows = commit.members.reduce(0) { $0 + $1.rows }
        // A budget cut by a charge is no budget to fill: only a long commit measures the pace then.
        state.budget.record(rows: rows, budget: commit.budgetCharged ? .max : commit.rowBudget, elapsed: elapsed)
        if !commit.members.isEmpty {
            WriterMetrics.groupCommitRows.record(rows)
            WriterMetrics.groupCommitDuration.record(duration: started.duration(to: now))
        }
        guard describing else { return nil }
        return [
            "saves": "\(commit.members.count)", "joined": "\(commit.joined)", "rows": "\(rows)",
            "seconds": "\(elapsed)",
            "next_rows": "\(state.budget.next)",
        ]
    }

    /// Collects each write when the store has run it (outside the lock: a write already run calls back at once).
    private func follow(_ writes: [QueuedWrite]) {
        for write in writes { write.whenWritten { [self] in collectWritten() } }
    }

    /// Hands each write the store finished, in order, to the pipeline, queueing the next group as soon as the store
    /// is idle (it works on it while the pipeline carries this one on); wakes those waiting for room.
    private func collectWritten() {
        var commits: [Logger.Metadata] = []
        let tracing = logger.logLevel <= .trace
        let (collected, queued, waiting) = state.withLock {
            state -> (Bool, [QueuedWrite], [CheckedContinuation<Void, Never>]) in
            var written: [CommittedWrite] = []
            var queued: [QueuedWrite] = []
            while let first = state.queued.first, first.write.isWritten {
                state.queued.removeFirst()
                if let commit = Self.measure(first.write, in: &state, describing: tracing) { commits.append(commit) }
                if state.queued.isEmpty { queued += queuePending(&state) }
                written.append(first.write.committed(at: first.position, writtenAt: .now))
            }
            guard !written.isEmpty else { return (false, [], []) }
            // Under the lock, so that the pipeline takes the writes in the order they were written.
            pipeline.accept(written)
            state.collections += 1
            defer { state.waitingForRoom = [] }
            return (true, queued, state.waitingForRoom)
        }
        follow(queued)
        for waiter in waiting { waiter.resume() }
        if collected { pipeline.pump() }
        for commit in commits { logger.trace("group commit written", metadata: commit) }
    }
}

/// A write the router queued (``StoreWriter/queue(_:)``): its place in the writer's order, and its result once the
/// pipeline released it.
struct QueuedOperation<Output: Sendable>: Sendable {
    let name: String
    /// Its position: the router runs what follows it when it answers this position.
    let position: UInt64
    let result: PendingWrite<Result<Output, any Error>>
    let pipeline: CommitPipeline

    /// The result once every stage released the write.
    /// - Throws: what the write threw, ``WriterStoppedError`` when the pipeline closed before it was written, or
    ///   ``WriteAbandonedError`` when it was abandoned (``CommitPipeline/abandon()``) before the write was released.
    nonisolated(nonsending) var value: Output {
        get async throws {
            await pipeline.waitUntilReleased(position)
            guard pipeline.hasReleased(position) else { throw WriteAbandonedError(write: name) }
            return try released()
        }
    }

    /// The result of a write the pipeline released (as the router answers it).
    func released() throws -> Output {
        guard let result = result.result else { throw WriterStoppedError(write: name) }
        return try result.get()
    }
}
