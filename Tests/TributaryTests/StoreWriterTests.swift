import Foundation
import Logging
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
        "a message's saves wait while 1,024 gathered behind a busy store, then every save is answered once, in order, in groups of 1, 1,024 and 1"
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
        #expect(groups.map(\.count) == [1, 1024, 1])
        #expect(groups.flatMap { $0 } == Array(1...1026), "each save answered once, in the order handed over")
    }

    @Test("a group commit takes the gathered saves up to its row budget; the rest go in the next, in order")
    func rowBudget() async throws {
        let writer = StoreWriter(store: store.store, logger: Logger(label: "test"), groupRows: 5, answersWaiting: {})
        /// A save inserting `rows` users.
        func inserting(_ rows: Int, id: UInt64) -> SaveGroup.Member {
            let batch = Tributary_V1_EntityBatch.with {
                $0.entity = "User"
                $0.operation = .insert
                $0.ids = Data((0..<rows).flatMap { _ in UUID().bytes })
                $0.columns = [
                    .with {
                        $0.name = "login"; $0.strings = (0..<rows).map { "user\(id)-\($0)" }
                    }
                ]
            }
            return .init(
                save: SaveRequest(changes: .with { $0.batches = [batch] }), peer: Data([1]), worker: "w1",
                requestID: id)
        }
        let release = blockTheStore()
        var released = false
        defer { if !released { release.signal() } }
        #expect(await writer.enqueue([inserting(1, id: 1)], claims: []))  // queued at once, behind the block
        // Gathered while the store is busy: 2 + 2 + 2 + 7 + 1 rows, behind budgets of 5.
        let gathered = [inserting(2, id: 2), inserting(2, id: 3), inserting(2, id: 4), inserting(7, id: 5)]
        #expect(await writer.enqueue(gathered + [inserting(1, id: 6)], claims: []))
        release.signal()
        released = true
        var groups: [[UInt64]] = []
        while groups.flatMap({ $0 }).count < 6 {
            for answer in await writer.flush() {
                guard case .committed(let commit, let result, _) = answer else { continue }
                #expect(result.saves.allSatisfy { if case .success = $0 { true } else { false } })
                groups.append(commit.members.map(\.requestID))
            }
        }
        // At least one save per group, and a save larger than the budget goes alone.
        #expect(groups == [[1], [2, 3], [4], [5], [6]])
        let users = try await store.store.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM User") }
        #expect(users == 15)
    }

    @Test("a stopped writer refuses saves and pushes, and what was handed over before is answered by the stop")
    func stopRefusesLaterWork() async throws {
        let writer = makeWriter()
        let release = blockTheStore()
        #expect(await writer.enqueue(saves(1...3), claims: []))
        release.signal()
        let last = await writer.stop()
        let answered = last.flatMap { answer -> [UInt64] in
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
}
