import Foundation
import Logging
import ServiceLifecycle

/// The store's writer: the only owner of the group-commit pipeline and the one path by which jobs are leased.
///
/// The router hands it each message's saves and the claims for workers' credit (``enqueue(_:claims:)``), and
/// pushes (``push(_:)``). While one group commit runs, the next gathers; as soon as the store has written one,
/// the next is queued (its saves in one transaction, a savepoint each, and its claims after them, so a completion
/// and the lease of the job that takes its slot commit together), and only then is the finished one handed to the
/// router, in order, as a ``WriterAnswer`` (``takeAnswers()``): the store works while the router answers.
///
/// Its loop (``run()``) follows the writes in the order they were queued; ``stop()`` writes what was handed to it
/// and then takes nothing more.
actor StoreWriter: Service {
    /// The most saves that gather while the store is busy; the next message's saves wait for it.
    static let maximumPendingSaves = 1024

    /// The most writes queued on the store (pushes queue behind group commits); the next push waits.
    static let maximumQueuedWrites = 8

    private let store: RootStore
    private let logger: Logger
    /// Tells the router that answers wait (``takeAnswers()``); called from this actor, never awaited.
    private let answersWaiting: @Sendable () -> Void
    /// Saves gathered for the next group commit.
    private var pendingSaves = SaveGroup()
    /// Claims for the next group commit, one per worker (credit taken meanwhile adds to its claim, up to the
    /// worker's credit: at most 1,024 jobs).
    private var pendingClaims: [QueuedCommit.Claim] = []
    /// Writes queued on the store and not collected yet, oldest first.
    private var queued: [QueuedWrite] = []
    /// Writes done and not yet taken by the router, oldest first.
    private var answers: [WriterAnswer] = []
    private var stopped = false
    /// Each queued write, for ``run()`` to wait on in turn.
    private nonisolated let written: AsyncStream<QueuedWrite>
    private nonisolated let writtenInput: AsyncStream<QueuedWrite>.Continuation

    init(store: RootStore, logger: Logger, answersWaiting: @escaping @Sendable () -> Void) {
        self.store = store
        self.logger = logger
        self.answersWaiting = answersWaiting
        (written, writtenInput) = AsyncStream.makeStream()
    }

    /// Follows the queued writes in order, collecting each as the store finishes it, until graceful shutdown.
    /// In the coordinator's group that comes after the router stopped, which stopped the writer (``stop()``)
    /// and took its last answers; any write still queued is collected before this returns.
    nonisolated func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.follow() }
            try? await gracefulShutdown()
            writtenInput.finish()
        }
    }

    private func follow() async {
        for await write in written {
            await write.written()
            collectWritten()
        }
    }

    /// Gathers a message's saves and claims for the next group commit, and queues it at once when the store is
    /// idle. Waits while too many saves gathered, so a flood of saves slows its senders instead of growing.
    /// - Returns: false when the writer has stopped: nothing was taken (the saves are to be refused).
    func enqueue(_ saves: [SaveGroup.Member], claims: [QueuedCommit.Claim]) async -> Bool {
        while !stopped, pendingSaves.count >= Self.maximumPendingSaves, let first = queued.first {
            await first.written()
            collectWritten()
        }
        guard !stopped else { return false }
        for save in saves { pendingSaves.append(save) }
        for claim in claims { add(claim) }
        if queued.isEmpty { queuePending() }
        return true
    }

    /// Queues a push behind the saves gathered before it (a push must not overtake them: one may finish a job
    /// whose unique key it reuses). Waits while the store has many writes queued.
    /// - Returns: false when the writer has stopped.
    func push(_ push: QueuedPush.Request) async -> Bool {
        while !stopped, queued.count >= Self.maximumQueuedWrites, let first = queued.first {
            await first.written()
            collectWritten()
        }
        guard !stopped else { return false }
        queuePending()
        queue(.push(QueuedPush(request: push, write: store.queuePush(push.specs, batch: push.batch))))
        return true
    }

    /// Queues what gathered, even while the store is busy, waits until every write handed over so far is done,
    /// and returns every answer not taken yet: for a message that must see the saves before it. Saves handed
    /// over meanwhile are not waited for, so a stop ends even while workers go on saving.
    func flush() async -> [WriterAnswer] {
        queuePending()
        if let last = queued.last {
            await last.written()
            // Writes finish in the order queued: every one up to `last` is collected here.
            collectWritten()
        }
        return takeAnswers()
    }

    /// The answers of the writes done since the last call, in the order the writes were queued.
    func takeAnswers() -> [WriterAnswer] {
        defer { answers = [] }
        return answers
    }

    /// Writes what was handed over, then takes nothing more; returns the answers not taken yet. Saves and claims
    /// handed over afterwards are refused (``enqueue(_:claims:)`` returns false).
    func stop() async -> [WriterAnswer] {
        stopped = true
        let last = await flush()
        writtenInput.finish()
        return last
    }

    private func add(_ claim: QueuedCommit.Claim) {
        if let index = pendingClaims.firstIndex(where: { $0.peer == claim.peer && $0.worker.id == claim.worker.id }) {
            pendingClaims[index].request.limit += claim.request.limit
        } else {
            pendingClaims.append(claim)
        }
    }

    /// Queues the gathered saves and claims on the store as one group commit.
    private func queuePending() {
        guard !pendingSaves.isEmpty || !pendingClaims.isEmpty else { return }
        let members = pendingSaves.members
        let claims = pendingClaims
        pendingSaves = SaveGroup()
        pendingClaims = []
        let write = store.queueGroupCommit(members.map { ($0.save, $0.worker) }, thenClaim: claims.map(\.request))
        queue(.groupCommit(QueuedCommit(members: members, claims: claims, write: write)))
    }

    private func queue(_ write: QueuedWrite) {
        queued.append(write)
        writtenInput.yield(write)
    }

    /// Moves each write the store finished, in order, to the answers; the store takes the next group before the
    /// router answers this one, and works on it meanwhile.
    private func collectWritten() {
        var collected = false
        while let first = queued.first, let answer = first.answer {
            queued.removeFirst()
            if queued.isEmpty { queuePending() }
            answers.append(answer)
            collected = true
        }
        if collected { answersWaiting() }
    }
}
