import Foundation
import Testing

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo

/// The change feed against real coordinator and worker processes: resume, catch-up, gap filling, pruning,
/// filters and durable subscribers.
@Suite("Change feed: every commit exactly once, in order, resumable", .serialized)
struct FeedIntegrationTests {
    /// A feed on `coordinator` with the given options.
    static func feed(_ coordinator: TestCoordinator, _ configure: (inout ChangeFeed.Options) -> Void = { _ in }) throws
        -> ChangeFeed
    {
        var options = ChangeFeed.Options()
        configure(&options)
        return try ChangeFeed(
            feed: coordinator.process.feedEndpoint, jobs: coordinator.process.listenEndpoint, options: options)
    }

    /// Reads didSave events until `stop` says so (bounded in time).
    static func read(
        _ feed: ChangeFeed, timeout: Duration = .seconds(120), until stop: @escaping @Sendable ([DidSave]) -> Bool
    ) async throws -> [DidSave] {
        try await withTimeout("feed events", timeout) {
            var events: [DidSave] = []
            for try await event in feed {
                guard case .didSave(let save) = event else { continue }
                events.append(save)
                if stop(events) { break }
            }
            return events
        }
    }

    /// Reads didSave events until the feed says it has caught up with history.
    static func readHistory(_ feed: ChangeFeed) async throws -> [DidSave] {
        try await withTimeout("the feed to catch up", .seconds(120)) {
            var events: [DidSave] = []
            for try await event in feed {
                switch event {
                case .didSave(let save): events.append(save)
                case .caughtUp: return events
                case .snapshot: Issue.record("no snapshot was expected")
                case .rewritten: Issue.record("no rewrite was expected")
                }
            }
            return events
        }
    }

    static func pullRequestsInserted(_ events: [DidSave]) -> [UUID] {
        events.flatMap { $0.inserted.filter { $0.entity == "PullRequest" }.map(\.uuid) }
    }

    @Test("a subscriber that disconnects in the middle of a 50,000-row import and resumes gets every commit once")
    func resumeMidImport() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 2)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let pushed = try await client.pushImport(
            DemoData.pullRequests(count: 50_000, users: 500), rowsPerJob: 500)

        let first = try Self.feed(coordinator) { $0.since = 0 }
        let before = try await Self.read(first) { Self.pullRequestsInserted($0).count >= 20_000 }
        let resumeAt = try #require(before.last?.seq)
        await first.close()

        let second = try Self.feed(coordinator) { $0.since = resumeAt }
        let status = try await client.finish(pushed.batch)
        #expect(status.doneJobs == 100)
        let lastSeq = try await client.status().lastSeq
        let after = try await Self.read(second) { $0.last?.seq == lastSeq }
        await second.close()
        await client.close()

        let seqs = (before + after).map(\.seq)
        #expect(seqs == Array(1...lastSeq), "every commit once, in order, across the reconnect")
        let inserted = Self.pullRequestsInserted(before + after)
        #expect(inserted.count == 50_000 && Set(inserted).count == 50_000)
        #expect(await coordinator.process.stop() == 0)
    }

    @Test("a late subscriber catches up from history; an entity filter passes only that entity's parts")
    func lateJoinAndFilters() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let pushed = try await client.pushImport(DemoData.pullRequests(count: 2_000, users: 50), rowsPerJob: 200)
        _ = try await client.finish(pushed.batch)
        let lastSeq = try await client.status().lastSeq

        let late = try Self.feed(coordinator) { $0.since = 0 }
        let all = try await Self.readHistory(late)
        await late.close()
        #expect(all.map(\.seq) == Array(1...lastSeq))
        #expect(Set(Self.pullRequestsInserted(all)).count == 2_000)
        #expect(all.allSatisfy { !$0.values.isEmpty }, "events carry the values written")

        let users = try Self.feed(coordinator) {
            $0.since = 0
            $0.filter = FeedFilter(entities: ["User"])
        }
        let userEvents = try await Self.readHistory(users)
        await users.close()
        let userIDs = userEvents.flatMap { $0.inserted + $0.updated + $0.deleted }
        #expect(!userIDs.isEmpty && userIDs.allSatisfy { $0.entity == "User" })
        #expect(Set(userEvents.flatMap(\.inserted)).count == 50, "each of the 50 users inserted once")
        #expect(userEvents.flatMap(\.values).allSatisfy { $0.entity == "User" })

        await client.close()
    }

    @Test("a stalled subscriber's dropped live messages are filled from history, once and in order")
    func stalledSubscriberCatchesUp() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 2)
        defer { Task { await coordinator.process.stop() } }
        // Live: it holds one message while not read, so nearly all of the import is dropped.
        let feed = try Self.feed(coordinator) { $0.liveBufferMessages = 1 }
        var iterator = feed.makeAsyncIterator()
        guard case .caughtUp(let start) = try await iterator.next() else { throw TimedOut(what: "the feed to go live") }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let pushed = try await client.pushImport(DemoData.pullRequests(count: 10_000, users: 200), rowsPerJob: 250)
        _ = try await client.finish(pushed.batch)
        let lastSeq = try await client.status().lastSeq
        let events = try await withTimeout("the stalled feed to catch up", .seconds(60)) { [iterator] in
            var iterator = iterator
            var events: [DidSave] = []
            while let event = try await iterator.next() {
                guard case .didSave(let save) = event else { continue }
                events.append(save)
                if save.seq == lastSeq { break }
            }
            return events
        }
        await feed.close()
        await client.close()
        #expect(events.map(\.seq) == Array((start + 1)...lastSeq))
        #expect(Set(Self.pullRequestsInserted(events)).count == 10_000)
    }

    @Test("a pruned position is answered explicitly; a snapshot then carries the objects and the feed goes on")
    func prunedPositionAndSnapshot() async throws {
        let directory = try TemporaryDirectory()
        let first = try await TestCoordinator.start(in: directory, workers: 1)
        let client = try JobClient(endpoint: first.process.listenEndpoint)
        let pushed = try await client.pushImport(DemoData.pullRequests(count: 1_000, users: 40), rowsPerJob: 100)
        _ = try await client.finish(pushed.batch)
        await client.close()
        #expect(await first.process.stop() == 0)

        // A restart with a small count limit prunes at once.
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, arguments: ["--history-commits", "3"])
        defer { Task { await coordinator.process.stop() } }
        let restarted = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let status = try await restarted.status()
        try await waitUntil("history to be pruned") { try await restarted.status().oldestHistorySeq > 1 }
        let lastSeq = status.lastSeq

        let refused = try Self.feed(coordinator) { $0.since = 0 }
        do {
            _ = try await Self.read(refused) { _ in true }
            Issue.record("a pruned position was served")
        } catch let error as ChangeFeedError {
            #expect(error.protocolError?.code == .historyPruned)
            #expect(error.message.contains("take a snapshot"))
        }
        await refused.close()

        let recovered = try Self.feed(coordinator) {
            $0.since = 0
            $0.snapshotWhenPruned = true
        }
        var objects: [String: Int] = [:]
        var snapshotSeq: UInt64?
        var caughtUp: UInt64?
        for try await event in recovered {
            switch event {
            case .snapshot(let batches, let seq, let isLast):
                for batch in batches { objects[batch.entity, default: 0] += batch.ids.count / 16 }
                if isLast { snapshotSeq = seq }
            case .caughtUp(let seq): caughtUp = seq
            case .didSave: Issue.record("no commit after the snapshot was expected")
            case .rewritten: Issue.record("no rewrite was expected")
            }
            if caughtUp != nil { break }
        }
        await recovered.close()
        await restarted.close()
        #expect(objects["PullRequest"] == 1_000 && objects["User"] == 40)
        #expect(snapshotSeq == lastSeq && caughtUp == lastSeq)
    }

    @Test("a durable subscriber resumes from the position it acknowledged")
    func durableSubscriber() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let pushed = try await client.pushImport(DemoData.pullRequests(count: 1_000, users: 40), rowsPerJob: 100)
        _ = try await client.finish(pushed.batch)
        let lastSeq = try await client.status().lastSeq

        let first = try Self.feed(coordinator) {
            $0.durableName = "audit"
            $0.since = 0
        }
        let firstEvents = try await Self.read(first) { $0.count == 4 }
        try await first.acknowledge()
        await first.close()
        #expect(try await client.subscribers().map(\.position) == [4])

        let second = try Self.feed(coordinator) { $0.durableName = "audit" }
        let rest = try await Self.read(second) { $0.last?.seq == lastSeq }
        await second.close()
        #expect((firstEvents + rest).map(\.seq) == Array(1...lastSeq))
        _ = try await client.deleteSubscriber(name: "audit")
        #expect(try await client.subscribers().isEmpty)
        await client.close()
    }
}
