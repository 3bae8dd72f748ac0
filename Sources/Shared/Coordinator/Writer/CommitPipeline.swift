import ServiceLifecycle
import Synchronization

/// What follows a commit: the writes the store committed pass through the inserted ``CommitStage``s, in order,
/// then wait for the router to answer them (acks and didSave events, assignments, push replies, the follow-ups of
/// its own writes); a write of any other caller returns to it once released.
///
/// Stages: writer (``StoreWriter``, on GRDB's writer thread: transaction, commit, sync) → each ``CommitStage`` →
/// answers (taken by the router, ``takeAnswers()``, which tells the pipeline once they are sent, ``answered(_:)``).
/// The router never waits on any of them: it is woken when answers wait (`answersWaiting`). A read that must see the
/// saves handed over before it waits on its own for their answers (``waitUntilAnswered(_:)``).
///
/// Its state is behind one lock. Writes enter from the writer's thread and leave from whichever thread a stage
/// releases them on; one caller at a time carries them on (``pump()``), so each stage and the answers see them in
/// the order committed.
final class CommitPipeline: Service, Sendable {
    private struct State {
        /// Per stage, the writes handed to it and not released yet, oldest first.
        var held: [[CommittedWrite]]
        /// Per stage, writes that reached it and are not handed to it yet.
        var arriving: [[CommittedWrite]]
        /// Released by every stage, not taken by the router yet.
        var answers: [CommittedWrite] = []
        /// Every write up to this position was released by every stage.
        var released: UInt64 = 0
        /// Every write up to this position was answered, and this many saves.
        var answered = WriterBarrier(saves: 0, position: 0)
        /// Set by ``close()``: whoever waits returns.
        var closed = false
        /// Set by ``abandon()``: what was not released by then never will be.
        var abandoned = false
        /// Whether a caller is carrying writes on (the others leave theirs to it).
        var pumping = false
        var waitingForRelease: [(UInt64, CheckedContinuation<Void, Never>)] = []
        var waitingForAnswers: [(WriterBarrier, CheckedContinuation<Void, Never>)] = []
    }

    private let stages: [any CommitStage]
    private let state: Mutex<State>
    /// Tells the router that answers wait; never waits.
    private let answersWaiting: @Sendable () -> Void

    /// - Parameters:
    ///   - stages: what a commit passes through before its answer, in order (none: answered once committed).
    ///   - answersWaiting: wakes the router; called on whichever thread released the writes.
    init(stages: [any CommitStage] = [], answersWaiting: @escaping @Sendable () -> Void) {
        self.stages = stages
        self.answersWaiting = answersWaiting
        state = Mutex(State(held: stages.map { _ in [] }, arriving: stages.map { _ in [] }))
    }

    /// Runs the stages until graceful shutdown; then lets every waiter go (``close()``).
    func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            for stage in stages { group.addTask { try await stage.run() } }
            try? await gracefulShutdown()
        }
        close()
    }

    /// Takes writes the store committed, in order: called by the writer under its own lock (this only queues
    /// them); ``pump()`` carries them on once the writer's lock is released.
    func accept(_ writes: [CommittedWrite]) {
        guard !writes.isEmpty else { return }
        state.withLock { state in
            if stages.isEmpty { Self.releaseAll(writes, in: &state) } else { state.arriving[0] += writes }
        }
    }

    /// Hands each stage the writes that reached it and wakes who waits for what was released, one caller at a
    /// time (a caller that finds another at it leaves its writes to it).
    func pump() {
        while true {
            let (deliveries, woken, answersReady) = state.withLock {
                state -> ([(Int, [CommittedWrite])], [CheckedContinuation<Void, Never>], Bool) in
                guard !state.pumping else { return ([], [], false) }
                var deliveries: [(Int, [CommittedWrite])] = []
                for index in state.arriving.indices where !state.arriving[index].isEmpty {
                    deliveries.append((index, state.arriving[index]))
                    state.held[index] += state.arriving[index]
                    state.arriving[index] = []
                }
                let woken = Self.takeReleased(&state)
                if !deliveries.isEmpty { state.pumping = true }
                return (deliveries, woken, !state.answers.isEmpty)
            }
            for waiter in woken { waiter.resume() }
            if answersReady { answersWaiting() }
            guard !deliveries.isEmpty else { return }
            for (index, writes) in deliveries {
                stages[index].committed(writes) { [self] through in release(stage: index, through: through) }
            }
            state.withLock { $0.pumping = false }
        }
    }

    /// Stage `index` lets the writes up to `through` go on: to the next stage, or to their answers.
    private func release(stage index: Int, through position: UInt64) {
        state.withLock { state in
            guard !state.abandoned else { return }
            let count = state.held[index].prefix { $0.position <= position }.count
            guard count > 0 else { return }
            let released = Array(state.held[index].prefix(count))
            state.held[index].removeFirst(count)
            if index + 1 < stages.count {
                state.arriving[index + 1] += released
            } else {
                Self.releaseAll(released, in: &state)
            }
        }
        pump()
    }

    private static func releaseAll(_ writes: [CommittedWrite], in state: inout State) {
        state.answers += writes
        if let last = writes.last { state.released = max(state.released, last.position) }
    }

    /// Who waited for a position now released (under the lock).
    private static func takeReleased(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let released = state.released
        let (ready, waiting) = state.waitingForRelease.split { $0.0 <= released }
        state.waitingForRelease = waiting
        return ready.map(\.1)
    }

    /// The writes released by every stage since the last call, in order, for the router to answer; it calls
    /// ``answered(_:)`` once it has.
    func takeAnswers() -> [CommittedWrite] {
        state.withLock { state in
            defer { state.answers = [] }
            return state.answers
        }
    }

    /// The router answered `writes` (taken from ``takeAnswers()``): reads waiting for them go on.
    func answered(_ writes: [CommittedWrite]) {
        guard let last = writes.last else { return }
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.answered.position = max(state.answered.position, last.position)
            state.answered.saves += writes.reduce(0) { $0 + $1.saves }
            let answered = state.answered
            let (ready, waiting) = state.waitingForAnswers.split { $0.0.isCovered(by: answered) }
            state.waitingForAnswers = waiting
            return ready.map(\.1)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once the write at `position` (and every one before it) was released by every stage, or the
    /// pipeline closed.
    nonisolated(nonsending) func waitUntilReleased(_ position: UInt64) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.closed || state.released >= position { return true }
                state.waitingForRelease.append((position, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Returns once everything handed to the writer before `barrier` was taken (``StoreWriter/barrier()``) was
    /// answered, or the pipeline closed: for a read that must see the saves before it.
    nonisolated(nonsending) func waitUntilAnswered(_ barrier: WriterBarrier) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.closed || barrier.isCovered(by: state.answered) { return true }
                state.waitingForAnswers.append((barrier, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Lets every waiter go: nothing more will be released or answered (the writer stopped and its last answers
    /// were sent, or nobody is left to send them).
    func close() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closed = true
            defer {
                state.waitingForRelease = []
                state.waitingForAnswers = []
            }
            return state.waitingForRelease.map(\.1) + state.waitingForAnswers.map(\.1)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Gives up the writes the stages hold, and any to come: none of them will be released, and whoever waits for
    /// one returns (``hasReleased(_:)`` tells it was not). For a primary that lost its leadership: what it committed
    /// and did not release is never to be acknowledged.
    func abandon() {
        state.withLock { $0.abandoned = true }
        close()
    }

    /// Whether the write at `position` was released by every stage; false for one the pipeline abandoned.
    func hasReleased(_ position: UInt64) -> Bool {
        state.withLock { state in state.released >= position || !state.abandoned }
    }

    /// How many writes the stages hold (for tests and status).
    var heldCount: Int { state.withLock { state in state.held.reduce(0) { $0 + $1.count } } }
}

/// What a read that must see the saves before it waits for: every save handed to the writer before it, and every
/// write queued before it, answered (``CommitPipeline/waitUntilAnswered(_:)``).
struct WriterBarrier: Sendable, Equatable {
    /// Saves handed to the writer, counted in the order handed over.
    var saves: Int
    /// The position of the last write queued.
    var position: UInt64

    func isCovered(by answered: WriterBarrier) -> Bool {
        answered.saves >= saves && answered.position >= position
    }
}

extension Array {
    /// The elements that satisfy `isIncluded` and those that do not, each in order.
    fileprivate func split(_ isIncluded: (Element) -> Bool) -> ([Element], [Element]) {
        var included: [Element] = []
        var excluded: [Element] = []
        for element in self {
            if isIncluded(element) { included.append(element) } else { excluded.append(element) }
        }
        return (included, excluded)
    }
}
