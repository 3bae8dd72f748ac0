import Foundation
import Testing
import TributaryCommandSupport

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Every way a job ends reaches the feed's `$jobs` topic and the job counters, a parent's failure settling its
/// children included.
@Suite("Job endings: the feed and the counters", .serialized)
struct JobEndingTests {
    @Test("a parent's death names every job it ends: itself, then its children and grandchildren by their policy")
    func storeNamesSettledJobs() async throws {
        let temporary = try TemporaryStore(modelJSON: DemoData.modelJSON)
        let store = temporary.store
        let parent = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        var cancelOnFailure = JobSpec(kind: "noop")
        cancelOnFailure.afterJobs = [parent]
        cancelOnFailure.onParentFailure = .cancel
        var runAnyway = JobSpec(kind: "noop")
        runAnyway.afterJobs = [parent]
        runAnyway.onParentFailure = .run
        var child = JobSpec(kind: "noop")
        child.afterJobs = [parent]
        var grandchild = JobSpec(kind: "noop")
        grandchild.afterPushed = [0]
        let ids = try await store.jobs.pushJobs([child, grandchild, cancelOnFailure, runAnyway], batch: "c").ids
        let claimed = try #require(try await store.jobs.claimJobs(for: "w", kinds: ["parent"], limit: 1).first)
        let failed = try #require(
            try await store.jobs.failJob(
                id: parent, attempt: claimed.attempt, worker: "w", message: "boom", permanent: true)
        )
        let ended = Dictionary(uniqueKeysWithValues: failed.endings.map { ($0.id, $0.state) })
        #expect(ended == [parent: .dead, ids[0]: .dead, ids[1]: .dead, ids[2]: .cancelled], "\(failed.endings)")
        #expect(failed.endings.first?.ranAttempt == true && failed.endings.dropFirst().allSatisfy { !$0.ranAttempt })
        #expect(failed.endings.allSatisfy { $0.progress.batch == ($0.id == parent ? "p" : "c") })
    }

    @Test("a cancelled parent's children, dead or cancelled by their policy, are published on $jobs and counted")
    func settledChildrenPublishedAndCounted() async throws {
        let directory = try TemporaryDirectory()
        let (seen, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let subscriber = try JobsTopicSubscriber(feed: coordinator.process.feedEndpoint)
            defer { subscriber.close() }
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            let parent = try await client.push([JobSpec(kind: "noop")]).ids[0]
            let noop = JobSpec(kind: "noop")
            let children = try await client.push([
                noop.with { $0.afterJobs = [parent] },
                noop.with { $0.afterPushed = [0] },
                noop.with {
                    $0.afterJobs = [parent]
                    $0.onParentFailure = .cancel
                },
            ]).ids
            _ = try await client.cancel(parent)
            await client.close()

            var states: [Int64: String] = [:]
            let wanted: [Int64: String] = [
                parent: "cancelled", children[0]: "dead", children[1]: "dead", children[2]: "cancelled",
            ]
            let deadline = ContinuousClock.now + .seconds(30)
            while states != wanted {
                let progress = try subscriber.next(before: deadline)
                states[Int64(progress.jobID)] = progress.state
            }
            let scrape = try await MetricsIntegrationTests.scrape(try #require(coordinator.process.httpURL))
            #expect(scrape.value("tributary_jobs_dead_total", ["kind": "noop"]) == 2)
            #expect(scrape.value("tributary_jobs_cancelled_total", ["kind": "noop"]) == 2)
            return states
        }
        #expect(exitStatus == 0)
        #expect(seen.count == 4)
    }
}
