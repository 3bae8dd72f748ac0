import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The store's writer: the one path by which anything is written to the store once it is open (group commits of
/// saves and claims, pushes, and every other write as a ``StoreWrite``), in the order handed over.
///
/// The router hands it each message's saves and the claims for workers' credit
/// (``enqueue(_:claims:moreToCome:committingHere:)``), and pushes (``push(_:)``). A small commit on an idle store
/// runs on the router's own thread (while the disk syncs quickly), so a lone save wakes no other thread. While one
/// group commit runs, the next gathers; as soon as the store has written one, the next is queued (its saves in one
/// transaction, a savepoint each only when one of them failed, and its claims after them, so a completion and the
/// lease of the job that takes its slot commit together), and only then is the finished one handed to the router, in
/// order, as a ``WriterAnswer`` (``takeAnswers()``): the store works while the router answers. Saves and claims handed over while a group commit is applied join it before its COMMIT, when
/// it is the last write queued (``join(commit:)``), rather than waiting for a commit of their own.
///
/// Its state is behind one lock rather than in an actor: handing it saves costs the router no hop, and a finished
/// write is collected on GRDB's writer thread right after its commit (``PendingWrite/whenWritten(_:)``), which
/// queues the next group at once and tells the router. Nothing under the lock waits: queueing a write on the
/// store only schedules it. ``stop()`` writes what was handed over and then takes nothing more.
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
        /// Writes queued on the store and not collected yet, oldest first.
        var queued: [QueuedWrite] = []
        /// Writes done and not yet taken by the router, oldest first.
        var answers: [WriterAnswer] = []
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
        /// The group commit a caller runs on its own thread, from when it is reserved until it is collected:
        /// other writes wait meanwhile, as they could otherwise reach the store before it.
        var runningHere: UInt64?
        /// How long the last small group commit (``runsAtOnce(_:)``) took on the store, its sync included: a caller
        /// may run the next one on its own thread only while this stays within ``atOnceLimit``.
        var smallCommitSeconds: Double = 0
    }

    private let store: RootStore
    private let logger: Logger
    /// Tells the router that answers wait (``takeAnswers()``); called on the writer's thread, never waits.
    private let answersWaiting: @Sendable () -> Void
    private let state: Mutex<State>
    /// The longest a small commit may take for the next to run on the caller's thread (``atOnceSeconds``).
    private let atOnceLimit: Double

    /// - Parameters:
    ///   - groupRows: the row budget of a group commit. Larger transactions write each index page once for more
    ///     rows (see docs/benchmarks.md, 'Import'); the budget bounds a commit's duration and memory.
    ///   - groupSeconds: the time budget of a group commit (see ``CommitBudget``); nil sets none.
    ///   - atOnceSeconds: the longest a small commit may take for the next to run on the caller's thread.
    init(
        store: RootStore, logger: Logger, groupRows: Int = CoordinatorConfiguration.defaultCommitRows,
        groupSeconds: Double? = CoordinatorConfiguration.defaultCommitSeconds,
        atOnceSeconds: Double = StoreWriter.atOnceSeconds, answersWaiting: @escaping @Sendable () -> Void
    ) {
        self.store = store
        atOnceLimit = atOnceSeconds
        self.logger = logger
        self.answersWaiting = answersWaiting
        state = Mutex(State(budget: CommitBudget(rows: groupRows, seconds: groupSeconds)))
    }

    /// Runs until graceful shutdown, which in the coordinator's group comes after the router stopped the writer
    /// (``stop()``) and took its last answers; a writer still running is stopped then.
    func run() async {
        try? await gracefulShutdown()
        let left = await stop()
        if !left.isEmpty {
            logger.warning("writes answered to nobody at shutdown", metadata: ["writes": "\(left.count)"])
        }
    }

    /// Gathers a message's saves and claims for the next group commit. When the store is idle, what gathered is
    /// committed at once: queued on the store, or, for a caller that may block (`committingHere`: the router, on its
    /// socket loop's thread, never on the cooperative pool), a small commit (``runsAtOnce(_:)``) on the caller's
    /// thread, which then waits the commit out (its sync included) and no thread is woken for a lone save; what
    /// arrives meanwhile waits in the socket and makes the next group. While small commits take longer than
    /// ``atOnceSeconds`` (a disk with slow syncs) they are queued instead, so that the router reads and gathers the
    /// next group while the store works. With `moreToCome` (the rest
    /// of a batch of messages is still to be handed over) it only gathers, unless a commit's rows gathered, so that
    /// a batch makes one commit. Waits while too many saves gathered, so a flood of saves slows its senders
    /// instead of growing.
    /// - Returns: false when the writer has stopped: nothing was taken (the saves are to be refused).
    nonisolated(nonsending) func enqueue(
        _ saves: [SaveGroup.Member], claims: [QueuedCommit.Claim], moreToCome: Bool = false,
        committingHere: Bool = false
    ) async -> Bool {
        await whenThereIsRoom { state in
            // Nothing handed over takes no room (the router's hand-over at the end of a step, say).
            guard saves.isEmpty || state.pendingSaves.count < Self.maximumPendingSaves || state.queued.isEmpty else {
                return .noRoom
            }
            for save in saves { state.pendingSaves.append(save) }
            for claim in claims { Self.add(claim, to: &state) }
            guard state.queued.isEmpty else { return .taken([]) }
            if moreToCome && state.pendingSaves.rows < state.budget.next { return .taken([]) }
            if committingHere && Self.runsAtOnce(state) && state.smallCommitSeconds <= self.atOnceLimit {
                return self.runPending(&state)
            }
            return .taken(self.queuePending(&state))
        }
    }

    /// The most rows, saves and claimed jobs of a commit run on the caller's thread: a commit this small takes
    /// about as long as the wake-ups it spares (see docs/benchmarks.md, 'Save round trip'); a larger one is queued,
    /// so the router reads on while the store works.
    static let atOnceRows = 256
    static let atOnceSaves = 64
    static let atOnceJobs = 64
    /// The longest a small commit may take (as the last one did, its sync included) for the next to run on the
    /// caller's thread: a disk whose syncs take longer would hold the router from reading for that long, so its
    /// commits are queued and the router gathers the next group meanwhile.
    static let atOnceSeconds = 0.001

    /// Whether what gathered is small enough to commit on the caller's thread.
    private static func runsAtOnce(_ state: borrowing State) -> Bool {
        isSmall(
            rows: state.pendingSaves.rows, saves: state.pendingSaves.count,
            jobs: state.pendingClaims.reduce(0) { $0 + $1.request.limit })
    }

    private static func isSmall(rows: Int, saves: Int, jobs: Int) -> Bool {
        rows <= atOnceRows && saves <= atOnceSaves && jobs <= atOnceJobs
    }

    /// Queues a push behind the saves gathered before it (a push must not overtake them: one may finish a job
    /// whose unique key it reuses). Waits while the store has many writes queued.
    /// - Returns: false when the writer has stopped.
    nonisolated(nonsending) func push(_ push: QueuedPush.Request) async -> Bool {
        await whenThereIsRoom { state in
            // The gathered saves go first, as a write of their own.
            let writes = state.queued.count + (state.pendingSaves.isEmpty && state.pendingClaims.isEmpty ? 1 : 2)
            guard writes <= Self.maximumQueuedWrites || state.queued.isEmpty, state.runningHere == nil else {
                return .noRoom
            }
            let commit = self.queueAllPending(&state)
            let write = QueuedWrite.push(
                QueuedPush(
                    request: push,
                    write: self.store.saves.queuePush(push.specs, batch: push.batch, onComplete: push.onComplete)))
            state.queued.append(write)
            return .taken(commit + [write])
        }
    }

    /// Runs `write` on the store in a transaction of its own, queued behind the saves gathered before it and every
    /// write queued so far (as a push is), and returns its result. Waits while the store has many writes queued.
    /// - Throws: what the write threw (its transaction rolled back), or ``WriterStoppedError`` when the writer has
    ///   stopped: nothing was written.
    nonisolated(nonsending) func write<Output: Sendable>(_ write: StoreWrite<Output>) async throws -> Output {
        let result = PendingWrite<Result<Output, any Error>>()
        let taken = await whenThereIsRoom { state in
            let writes = state.queued.count + (state.pendingSaves.isEmpty && state.pendingClaims.isEmpty ? 1 : 2)
            // Behind a commit a caller runs on its thread: queued now, this write could reach the store first.
            guard writes <= Self.maximumQueuedWrites || state.queued.isEmpty, state.runningHere == nil else {
                return .noRoom
            }
            let commit = self.queueAllPending(&state)
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
            state.queued.append(queued)
            return .taken(commit + [queued])
        }
        guard taken else { throw WriterStoppedError(write: write.name) }
        return try await result.value.get()
    }

    /// Queues what gathered, even while the store is busy, waits until every write handed over so far is done,
    /// and returns every answer not taken yet: for a message that must see the saves before it. Saves handed
    /// over meanwhile are not waited for, so a stop ends even while workers go on saving.
    nonisolated(nonsending) func flush() async -> [WriterAnswer] {
        let (queued, last) = state.withLock { state in (queueAllPending(&state), state.queued.last) }
        follow(queued)
        if let last {
            await last.written()
            // Writes finish in the order queued: every one up to `last` is collected here (again, harmlessly,
            // if its callback came first).
            collectWritten()
        }
        return takeAnswers()
    }

    /// How many callers wait for room (for tests).
    var waitingForRoomCount: Int { state.withLock { $0.waitingForRoom.count } }

    /// How many writes are queued on the store and not collected yet (for tests).
    var queuedWriteCount: Int { state.withLock { $0.queued.count } }

    /// The commit budget as it stands: its pace and what other writes charged to the next commit.
    var commitBudget: CommitBudget { state.withLock { $0.budget } }

    /// The answers of the writes done since the last call, in the order the writes were queued.
    func takeAnswers() -> [WriterAnswer] {
        state.withLock { state in
            defer { state.answers = [] }
            return state.answers
        }
    }

    /// Writes what was handed over, then takes nothing more; returns the answers not taken yet. Saves and claims
    /// handed over afterwards are refused (``enqueue(_:claims:moreToCome:committingHere:)`` returns false).
    nonisolated(nonsending) func stop() async -> [WriterAnswer] {
        let waiting = state.withLock { state in
            state.stopped = true
            defer { state.waitingForRoom = [] }
            return state.waitingForRoom
        }
        for waiter in waiting { waiter.resume() }
        return await flush()
    }

    /// What a caller did under the lock: found no room, or took its part (and queued these writes, or reserved a
    /// commit to run on its own thread once the lock is released).
    private enum Take {
        case noRoom
        case taken([QueuedWrite])
        /// Run on the caller's thread; `run` says whether something is due after the commit.
        case runAtOnce(QueuedWrite, run: () -> Bool)
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
            case .runAtOnce(let write, let run):
                follow([write])
                if run() { queueAfterCommit() }
                return true
            case nil:
                return false
            case .noRoom:
                await waitForRoom(after: collections)
            }
        }
    }

    /// Queues what is due after a commit run on the caller's thread (a fold of the inverse index, the WAL's restart;
    /// ``GroupCommitter/afterCommit(_:)``) as a write of its own, tracked like any other: until it is done, the next
    /// commit gathers rather than runs on the caller's thread, which would wait for it.
    private func queueAfterCommit() {
        let written = state.withLock { state -> QueuedWrite? in
            guard !state.stopped else { return nil }
            let written = PendingWrite<Duration>()
            store.saves.queueAfterCommit(into: written)
            let write = QueuedWrite.operation(name: "after commit", written: written)
            state.queued.append(write)
            return write
        }
        if let written { follow([written]) }
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
        queuePending(&state, atOnce: false).map { [$0.write] } ?? []
    }

    /// Reserves the gathered saves and claims (small: ``runsAtOnce(_:)``) as a group commit that the caller runs
    /// on its thread once the lock is released: it is the first write queued, so later ones wait for it.
    private func runPending(_ state: inout State) -> Take {
        guard let (write, run) = queuePending(&state, atOnce: true) else { return .taken([]) }
        return .runAtOnce(write, run: run)
    }

    /// Makes a group commit of the gathered saves (up to the row budget) and claims, queued on the store, or, when
    /// `atOnce`, to be run by the caller (`run`) once the lock is released.
    private func queuePending(_ state: inout State, atOnce: Bool) -> (write: QueuedWrite, run: () -> Bool)? {
        guard !state.pendingSaves.isEmpty || !state.pendingClaims.isEmpty else { return nil }
        let (rowBudget, charged) = state.budget.take()
        let members = state.pendingSaves.take(rowBudget: rowBudget)
        let claims = state.pendingClaims
        state.pendingClaims = []
        let id = state.nextCommitID
        state.nextCommitID += 1
        let saves = members.map { ($0.save, $0.worker) }
        let requests = claims.map(\.request)
        let joining: @Sendable () -> GroupCommitAddition = { [self] in join(commit: id) }
        let pending: PendingWrite<GroupCommitResult>
        var run: () -> Bool = { false }
        if atOnce {
            state.runningHere = id
            pending = PendingWrite()
            run = { [store] in
                store.saves.runGroupCommit(saves, thenClaim: requests, joining: joining, into: pending)
            }
        } else {
            pending = store.saves.queueGroupCommit(saves, thenClaim: requests, joining: joining)
        }
        let write = QueuedWrite.groupCommit(
            QueuedCommit(
                id: id, members: members, claims: claims, rowBudget: rowBudget, budgetCharged: charged,
                queuedAt: .now, write: pending))
        state.queued.append(write)
        return (write, run)
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
            guard case .groupCommit(var commit) = state.queued.last, commit.id == id else { return .init() }
            let rows = commit.members.reduce(0) { $0 + $1.rows }
            let members = state.pendingSaves.take(fitting: commit.rowBudget - rows)
            let claims = state.pendingClaims
            guard !members.isEmpty || !claims.isEmpty else { return .init() }
            state.pendingClaims = []
            commit.members += members
            commit.claims += claims
            commit.joined += members.count
            state.queued[state.queued.count - 1] = .groupCommit(commit)
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
        if isSmall(rows: rows, saves: commit.members.count, jobs: commit.claims.reduce(0) { $0 + $1.request.limit }) {
            state.smallCommitSeconds = elapsed
        }
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

    /// Moves each write the store finished, in order, to the answers, queueing the next group as soon as the
    /// store is idle (it works on it while the router answers this one); wakes those waiting for room and tells
    /// the router.
    private func collectWritten() {
        var commits: [Logger.Metadata] = []
        let tracing = logger.logLevel <= .trace
        let (collected, queued, waiting) = state.withLock {
            state -> (Bool, [QueuedWrite], [CheckedContinuation<Void, Never>]) in
            var collected = false
            var queued: [QueuedWrite] = []
            while let first = state.queued.first, first.isWritten {
                state.queued.removeFirst()
                if case .groupCommit(let commit) = first, commit.id == state.runningHere { state.runningHere = nil }
                if let commit = Self.measure(first, in: &state, describing: tracing) { commits.append(commit) }
                if state.queued.isEmpty { queued += queuePending(&state) }
                if let answer = first.answer(writtenAt: .now) { state.answers.append(answer) }
                collected = true
            }
            guard collected else { return (false, [], []) }
            state.collections += 1
            defer { state.waitingForRoom = [] }
            return (true, queued, state.waitingForRoom)
        }
        follow(queued)
        for waiter in waiting { waiter.resume() }
        if collected { answersWaiting() }
        for commit in commits { logger.trace("group commit written", metadata: commit) }
    }
}
