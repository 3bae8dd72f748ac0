import Foundation
import Logging
import Synchronization
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// The writer's group commits: saves wait for the store when too many gathered, each is answered once, in order,
/// and a stopped writer takes nothing more.
@Suite("StoreWriter: group commits, back-pressure and stop")
struct StoreWriterTests {
    let store = try! TemporaryStore(modelJSON: DemoData.modelJSON)

    func makeWriter() -> StoreWriter {
        StoreWriter(store: store.store, logger: Logger(label: "test"), answersWaiting: {})
    }

    /// Saves of no job and no changes: each commits on its own (`committedEmpty`), answered by request id.
    func saves(_ ids: ClosedRange<UInt64>) -> [SaveGroup.Member] {
        ids.map { .init(save: SaveRequest(changes: .init()), peer: Data([1]), worker: "w1", requestID: $0) }
    }

    /// Holds GRDB's writer queue until the returned semaphore is signalled.
    func blockTheStore() -> DispatchSemaphore {
        let release = DispatchSemaphore(value: 0)
        store.store.pool.asyncWriteWithoutTransaction { _ in release.wait() }
        return release
    }

    @Test(
        "a message's saves wait while 1,024 gathered behind a busy store, then every save is answered once, in order: the 1,024 join the commit the store runs next, the last save commits after it"
    )
    func savesWaitForRoom() async throws {
        let writer = makeWriter()
        let release = blockTheStore()
        var released = false
        defer { if !released { release.signal() } }
        #expect(await writer.enqueue(saves(1...1), claims: []))  // queued at once, behind the block
        #expect(await writer.enqueue(saves(2...1025), claims: []))  // gathered: the store is busy
        let late = Task { await writer.enqueue(saves(1026...1026), claims: []) }
        try await waitUntil("the last save to wait for room") { writer.waitingForRoomCount == 1 }
        release.signal()
        released = true
        #expect(await late.value)
        var groups: [[UInt64]] = []
        var answered = 0
        while answered < 1026 {
            for answer in await writer.flush() {
                guard case .committed(let commit, let result, _) = answer else { continue }
                groups.append(commit.members.map(\.requestID))
                answered += result.saves.filter { if case .success = $0 { true } else { false } }.count
            }
        }
        #expect(groups.map(\.count) == [1025, 1])
        #expect(groups.flatMap { $0 } == Array(1...1026), "each save answered once, in the order handed over")
    }

    @Test(
        "the saves of one wake-up gather while more of it is to come, then go to the store as one group commit, queued on its writer thread"
    )
    func wakeUpMakesOneCommit() async throws {
        let writer = makeWriter()
        #expect(await writer.enqueue(saves(1...1), claims: [], moreToCome: true))
        #expect(await writer.enqueue(saves(2...2), claims: [], moreToCome: true))
        #expect(writer.queuedWriteCount == 0, "more of the wake-up to come: gathered, nothing queued")
        #expect(await writer.enqueue(saves(3...3), claims: []))
        let answers = await writer.flush()
        #expect(answers.count == 1)
        guard case .committed(let commit, let result, _)? = answers.first else {
            Issue.record("no group commit answered")
            return
        }
        #expect(commit.members.map(\.requestID) == [1, 2, 3], "the wake-up's saves in one commit, in order")
        #expect(result.saves.allSatisfy { if case .success = $0 { true } else { false } })
    }

    /// A stage that holds every write until the test releases it, as a standby's confirmation would.
    final class HeldStage: CommitStage, @unchecked Sendable {
        let held = Mutex<(positions: [UInt64], release: (@Sendable (UInt64) -> Void)?)>(([], nil))
        func committed(_ writes: [CommittedWrite], release: @escaping @Sendable (UInt64) -> Void) {
            held.withLock { held in
                held.positions += writes.map(\.position)
                held.release = release
            }
        }
        func releaseAll() {
            let (last, release) = held.withLock { ($0.positions.last, $0.release) }
            if let last, let release { release(last) }
        }
        func run() async throws {}
    }

    @Test(
        "a stage between the commit and the answer holds every write: a group commit is not answered, a write's caller not returned to and a read after the saves not let go until the stage releases them, in order"
    )
    func stageHoldsAnswers() async throws {
        let stage = HeldStage()
        let writer = StoreWriter(store: store.store, logger: Logger(label: "test"), stages: [stage], answersWaiting: {})
        #expect(await writer.enqueue(saves(1...2), claims: []))
        let queued = try writer.queue(.setQueue("held", paused: true))
        let write = Task { try await queued.value }
        let barrier = writer.barrier()
        #expect(barrier == WriterBarrier(saves: 2, position: 2))
        let read = Task { await writer.pipeline.waitUntilAnswered(barrier) }
        try await waitUntil("the stage to hold both writes") {
            stage.held.withLock { $0.positions } == [1, 2]
        }
        #expect(writer.queuedWriteCount == 0, "both committed on the store")
        #expect(writer.takeAnswers().isEmpty, "nothing answered while the stage holds it")
        #expect(writer.pipeline.heldCount == 2)
        stage.releaseAll()
        #expect(try await write.value, "the write's caller returned once released")
        let answers = writer.takeAnswers()
        guard case .committed(let commit, _, _)? = answers.first, answers.count == 1 else {
            Issue.record("the group commit was not answered once: \(answers)")
            return
        }
        #expect(commit.members.map(\.requestID) == [1, 2])
        await read.value
    }

    @Test("a group commit takes the gathered saves up to its row budget; the rest go in the next, in order")
    func rowBudget() async throws {
        let writer = StoreWriter(store: store.store, logger: Logger(label: "test"), groupRows: 5, answersWaiting: {})
        let release = blockTheStore()
        var released = false
        defer { if !released { release.signal() } }
        #expect(await writer.enqueue([inserting(1, id: 1)], claims: []))  // queued at once, behind the block
        // Gathered while the store is busy: 2 + 2 + 2 + 7 + 1 rows, behind budgets of 5.
        let gathered = [inserting(2, id: 2), inserting(2, id: 3), inserting(2, id: 4), inserting(7, id: 5)]
        #expect(await writer.enqueue(gathered + [inserting(1, id: 6)], claims: []))
        release.signal()
        released = true
        let answers = try await answers(of: writer, saves: 6)
        #expect(answers.allSatisfy { $0.result.saves.allSatisfy { if case .success = $0 { true } else { false } } })
        // The first commit takes the saves that fit its budget when it is applied; then at least one save per
        // group, and a save larger than the budget goes alone.
        #expect(answers.map { $0.commit.members.map(\.requestID) } == [[1, 2, 3], [4], [5], [6]])
        #expect(answers.map(\.commit.joined) == [2, 0, 0, 0])
        let users = try await store.store.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM User") }
        #expect(users == 15)
    }

    /// A save inserting `rows` users (`valid`: into an entity the model has).
    func inserting(_ rows: Int, id: UInt64, valid: Bool = true) -> SaveGroup.Member {
        let batch = Tributary_V1_EntityBatch.with {
            $0.entity = valid ? "User" : "NoSuchEntity"
            $0.operation = .insert
            $0.ids = Data((0..<rows).flatMap { _ in UUID().bytes })
            $0.columns = [
                .with {
                    $0.name = "login"; $0.strings = (0..<rows).map { "user\(id)-\($0)" }
                }
            ]
        }
        return .init(
            save: SaveRequest(changes: .with { $0.batches = [batch] }), peer: Data([1]), worker: "w1", requestID: id)
    }

    /// The group commits the writer answers, taken as they come (never queueing what gathered, as ``flush()``
    /// would), until `saves` saves were answered.
    func answers(of writer: StoreWriter, saves: Int) async throws
        -> [(commit: QueuedCommit, result: GroupCommitResult)]
    {
        var answers: [(commit: QueuedCommit, result: GroupCommitResult)] = []
        try await waitUntil("\(saves) saves answered") {
            for answer in writer.takeAnswers() {
                if case .committed(let commit, let result, _) = answer { answers.append((commit, result)) }
            }
            return answers.reduce(0) { $0 + $1.commit.members.count } >= saves
        }
        return answers
    }

    @Test(
        "saves and claims that gather while a commit is applied join its transaction and are answered with it, once each, in order"
    )
    func joiningTheRunningCommit() async throws {
        let writer = makeWriter()
        let release = blockTheStore()
        var released = false
        defer { if !released { release.signal() } }
        #expect(await writer.enqueue([inserting(3, id: 1)], claims: []))  // queued at once, behind the block
        let claim = QueuedCommit.Claim(
            peer: Data([1]),
            worker: WorkerRecord(
                id: "w1", routingID: Data([1]), name: "w1", pid: 1, heartbeatInterval: .seconds(1), jobKinds: ["noop"],
                queues: [JobQueue.defaultName], queueWeights: [], lastSeen: .now),
            request: ClaimRequest(worker: "w1", kinds: ["noop"], limit: 2))
        #expect(await writer.enqueue([inserting(2, id: 2), inserting(4, id: 3)], claims: [claim]))
        release.signal()
        released = true
        let answers = try await answers(of: writer, saves: 3)
        #expect(answers.map { $0.commit.members.map(\.requestID) } == [[1, 2, 3]])
        #expect(answers.first?.commit.joined == 2)
        #expect(answers.first?.commit.claims.count == 1)
        #expect(answers.first?.result.claims.count == 1)
        #expect(answers.first?.result.saves.count == 3)
        let committed = answers.first?.result.saves.compactMap { result -> UInt64? in
            guard case .success(let applied) = result, case .committed(let seq, _, _, _) = applied.outcome else {
                return nil
            }
            return seq
        }
        #expect(committed == [1, 2, 3], "each save its own sequence number, in the order joined")
        let users = try await store.store.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM User") }
        #expect(users == 9)
    }

    @Test("a save that joined a commit and fails is rolled back alone: the commit is applied again, each save once")
    func joinedSaveFails() async throws {
        let writer = makeWriter()
        let release = blockTheStore()
        var released = false
        defer { if !released { release.signal() } }
        #expect(await writer.enqueue([inserting(3, id: 1)], claims: []))
        #expect(await writer.enqueue([inserting(2, id: 2), inserting(1, id: 3, valid: false)], claims: []))
        release.signal()
        released = true
        let answers = try await answers(of: writer, saves: 3)
        #expect(answers.map { $0.commit.members.map(\.requestID) } == [[1, 2, 3]])
        let outcomes = answers.flatMap(\.result.saves).map { result -> String in
            switch result {
            case .success: "ok"
            case .failure(let error): "\(error)".contains("NoSuchEntity") ? "unknown entity" : "\(error)"
            }
        }
        #expect(outcomes == ["ok", "ok", "unknown entity"])
        let users = try await store.store.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM User") }
        #expect(users == 5, "the saves that applied, each once")
        let history = try await store.store.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM tributary_history")
        }
        #expect(history == 2)
    }

    @Test("saves handed over after a push do not join the commit queued before it: they commit after the push")
    func joiningDoesNotOvertakeAPush() async throws {
        let writer = makeWriter()
        let release = blockTheStore()
        var released = false
        defer { if !released { release.signal() } }
        #expect(await writer.enqueue([inserting(1, id: 1)], claims: []))
        #expect(await writer.push(.init(peer: Data([1]), requestID: 2, batch: "b", specs: [JobSpec(kind: "noop")])))
        #expect(await writer.enqueue([inserting(1, id: 3)], claims: []))
        release.signal()
        released = true
        var order: [String] = []
        var answered: Set<UInt64> = []
        try await waitUntil("every write answered") {
            for answer in writer.takeAnswers() {
                switch answer {
                case .committed(let commit, _, _):
                    order.append("commit \(commit.members.map(\.requestID))")
                    answered.formUnion(commit.members.map(\.requestID))
                case .pushed(let push, _):
                    order.append("push \(push.requestID)")
                    answered.insert(push.requestID)
                }
            }
            return answered == [1, 2, 3]
        }
        #expect(order == ["commit [1]", "push 2", "commit [3]"])
    }

    @Test("a stopped writer refuses saves and pushes, and what was handed over before is answered by the stop")
    func stopRefusesLaterWork() async throws {
        let writer = makeWriter()
        let release = blockTheStore()
        #expect(await writer.enqueue(saves(1...3), claims: []))
        release.signal()
        await writer.stop()
        let answered = writer.takeAnswers().flatMap { answer -> [UInt64] in
            guard case .committed(let commit, _, _) = answer else { return [] }
            return commit.members.map(\.requestID)
        }
        #expect(answered == [1, 2, 3])
        #expect(await writer.enqueue(saves(4...4), claims: []) == false)
        #expect(
            await writer.push(.init(peer: Data([1]), requestID: 5, batch: "b", specs: [JobSpec(kind: "noop")]))
                == false)
        #expect(await writer.flush().isEmpty, "nothing was written after the stop")
    }

    @Test(
        "a write other than a save runs behind the saves gathered before it, in its own transaction, and returns its result; a failed one changes nothing; a stopped writer refuses one"
    )
    func otherWrites() async throws {
        let writer = makeWriter()
        let parent = try await store.store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        let release = blockTheStore()
        var released = false
        defer { if !released { release.signal() } }
        #expect(await writer.enqueue([inserting(1, id: 1)], claims: []))  // queued at once, behind the block
        #expect(await writer.enqueue([inserting(2, id: 2)], claims: []))  // gathered: the store is busy
        let cancel = Task { try await writer.write(.cancelJob(id: parent)) }
        try await waitUntil("the cancel to be queued") { writer.queuedWriteCount == 3 }
        let refused = Task { try await writer.write(.retryJob(id: parent)) }  // queued after: the job is cancelled
        try await waitUntil("the retry to be queued") { writer.queuedWriteCount == 4 }
        release.signal()
        released = true
        let cancelled = try #require(try await cancel.value)
        #expect(cancelled.before.state == .queued && cancelled.endings.map(\.state) == [.cancelled])
        await #expect(throws: StoreError.self) { try await refused.value }
        // The saves gathered before the cancel were written before it: their users are there.
        let users = try await store.store.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM User") }
        #expect(users == 3)
        #expect(try await store.store.jobs.job(id: parent)?.state == .cancelled)
        let answers = await writer.flush()
        #expect(
            answers.map { answer -> [UInt64] in
                guard case .committed(let commit, _, _) = answer else { return [] }
                return commit.members.map(\.requestID)
            } == [[1], [2]], "the router answers the two group commits, not the other writes")
        _ = await writer.stop()
        await #expect(throws: WriterStoppedError.self) { try await writer.write(.deleteJob(id: parent)) }
        #expect(try await store.store.jobs.job(id: parent) != nil, "the refused delete changed nothing")
    }

    @Test(
        "a write other than a commit is charged to the next group commit when saves gathered behind it, not when none did"
    )
    func otherWritesAreCharged() async throws {
        let writer = makeWriter()
        let slow = StoreWrite<Void>(name: "slow") { _, _ in
            // The write's own work: the store is busy for this long, whatever the test waits on.
            Thread.sleep(forTimeInterval: 0.2)
        }
        try await writer.write(slow)
        _ = try await writer.write(.releaseAllRunningJobs())
        #expect(writer.commitBudget.charged == 0, "nothing waited behind it")
        // Held on the store until the save has gathered behind it, however slowly this test is scheduled.
        let release = DispatchSemaphore(value: 0)
        let held = StoreWrite<Void>(name: "held") { _, _ in
            release.wait()
            Thread.sleep(forTimeInterval: 0.05)
        }
        let waited = Task { try await writer.write(held) }
        try await waitUntil("the held write to be queued") { writer.queuedWriteCount == 1 }
        #expect(await writer.enqueue(saves(1...1), claims: []))  // gathered behind it
        release.signal()
        try await waited.value
        // Not a flush, which would queue the save at once, ahead of the slow write's collection.
        try await waitUntil("the save's commit to be written") { writer.queuedWriteCount == 0 }
        let answers = writer.takeAnswers()
        let charged = answers.compactMap { answer -> Bool? in
            guard case .committed(let commit, _, _) = answer else { return nil }
            return commit.budgetCharged
        }
        #expect(charged == [true], "the save's commit was charged the held write's time")
        #expect(writer.commitBudget.charged == 0, "and spent it")
        _ = await writer.stop()
    }
}
