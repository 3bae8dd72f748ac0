import Foundation
import Logging
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo

/// What each ``Durability`` level syncs, read from the writer connection inside each write's transaction:
/// `synchronous` 2 (FULL) syncs the commit's WAL frames before it returns, 1 (NORMAL) leaves them to the checkpoint.
@Suite("Durability: what each level syncs")
struct DurabilityTests {
    let directory = try! TemporaryDirectory()

    /// The writer connection's `synchronous` while a write of `store` commits.
    func synchronous(_ writer: StoreWriter, synced: Bool) async throws -> Int {
        try await writer.write(
            StoreWrite(name: "read synchronous", synced: synced) { _, db in
                try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
            })
    }

    @Test("full: the writer's connection syncs every commit, a command's and any other")
    func full() async throws {
        let store = try RootStore.open(path: directory.path("full.sqlite"), model: DemoData.model, durability: .full)
        let writer = StoreWriter(store: store, logger: Logger(label: "test"), answersWaiting: {})
        #expect(try await synchronous(writer, synced: false) == 2)
        #expect(try await synchronous(writer, synced: true) == 2)
        _ = await writer.stop()
        try store.close()
    }

    @Test(
        "normal: a command a client is told is done is synced, other commits are not, and the level comes back after it"
    )
    func normal() async throws {
        let store = try RootStore.open(
            path: directory.path("normal.sqlite"), model: DemoData.model, durability: .normal)
        let writer = StoreWriter(store: store, logger: Logger(label: "test"), answersWaiting: {})
        #expect(try await synchronous(writer, synced: false) == 1)
        #expect(try await synchronous(writer, synced: true) == 2)
        #expect(try await synchronous(writer, synced: false) == 1, "back to normal after a synced commit")
        _ = await writer.stop()
        try store.close()
    }

    @Test("the commands clients are told are done are synced at every level; maintenance is not")
    func syncedCommands() {
        #expect(StoreWrite<Int>.pruneHistory(before: nil, keepingNewest: 10).synced == false)
        #expect(StoreWrite<Int>.pruneFinishedJobs(before: Date(), limit: 10).synced == false)
        #expect(StoreWrite<Int>.releaseAllRunningJobs().synced == false)
        #expect(StoreWrite<[JobStore.TimedOutAttempt]>.failTimedOutAttempts().synced == false)
        #expect(StoreWrite<(job: JobInfo, settled: [JobEnding])?>.retryJob(id: 1).synced)
        #expect(StoreWrite<(before: JobInfo, endings: [JobEnding])?>.cancelJob(id: 1).synced)
        #expect(StoreWrite<JobInfo?>.deleteJob(id: 1).synced)
        #expect(StoreWrite<ScheduleInfo?>.setSchedule("nightly", paused: true).synced)
        #expect(StoreWrite<ScheduleInfo?>.deleteSchedule("nightly").synced)
        #expect(StoreWrite<DurableSubscriber>.deleteSubscriber(name: "s").synced)
        #expect(
            StoreWrite<DurableSubscriber>.updateSubscriber(
                name: "s", position: FeedPosition(seq: 0), registerOnly: true
            )
            .synced)
        #expect(
            StoreWrite<DurableSubscriber>.updateSubscriber(
                name: "s", position: FeedPosition(seq: 5), registerOnly: false
            ).synced)
    }
}
