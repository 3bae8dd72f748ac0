import Foundation
import GRDB
import Testing

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Each limit on what peers send, exceeded against a real coordinator: answered with the error that names it, and
/// the coordinator keeps serving.
@Suite("Integration: limits on what peers send", .serialized)
struct LimitsTests {
    static let limits = [
        "--max-message-mb", "4", "--max-payload-mb", "1", "--max-change-set-rows", "1000",
        "--max-change-set-mb", "1", "--max-payload-rows", "50", "--max-pending-requests", "2",
    ]

    /// A job that saves 1,500 new users in one change set (over the row limit), or 100 with 20 KB names each
    /// (2 MB: over the byte limit, under the message limit).
    struct BigSave: JobHandler {
        let kind = "big-save"
        func run(_ job: JobRun) async throws {
            let wide = job.spec.arguments["wide"] == "yes"
            let context = job.makeContext()
            try await context.perform { context in
                for index in 0..<(wide ? 100 : 1_500) {
                    let user = try context.insert("User")
                    try user.setValue(.string("big\(index)"), for: "login")
                    if wide { try user.setValue(.string(String(repeating: "n", count: 20_000)), for: "name") }
                }
            }
            try await job.complete(context, progress: 1)
        }
    }

    @Test("payload, change-set rows and message size over their limits are refused by name; others are served")
    func sizeLimits() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0, arguments: Self.limits)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)

        var big = JobSpec(kind: "big-save", payload: Data(count: 1_500_000))
        let refused = await #expect(throws: ProtocolError.self) { try await client.push([big]) }
        #expect(refused?.code == .tooLarge && refused?.message.contains("--max-payload-mb") == true)

        // A change set of 1,500 rows against a limit of 1,000: the job dies naming the limit; nothing is stored.
        let worker = InProcessWorker.start(endpoint: coordinator.process.listenEndpoint, handlers: [BigSave()])
        defer { worker.cancel() }
        big.payload = Data()
        let status = try await client.finish(try await client.push([big]).batch)
        #expect(status.deadJobs == 1)
        #expect(status.dead.first?.message.contains("--max-change-set-rows") == true, "\(status.dead)")
        big.arguments = ["wide": "yes"]
        let wide = try await client.finish(try await client.push([big]).batch)
        #expect(wide.dead.first?.message.contains("--max-change-set-mb") == true, "\(wide.dead)")
        // An import payload of 60 rows against a limit of 50.
        let rows = await #expect(throws: ProtocolError.self) {
            try await client.pushImport(DemoData.pullRequests(count: 60, users: 3), rowsPerJob: 60)
        }
        #expect(rows?.code == .tooLarge && rows?.message.contains("--max-payload-rows") == true)
        let users = try await DatabaseQueue(path: coordinator.storePath).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM User")
        }
        #expect(users == 0)

        // A message over 4 MiB is dropped by libzmq (the peer is disconnected): no answer, and others are served.
        let flooder = try CoordinatorConnection(endpoint: coordinator.process.listenEndpoint)
        var huge = Tributary_V1_JobSpec()
        huge.kind = "big-save"
        huge.payload = Data(count: 5 << 20)
        await #expect(throws: ProtocolError.self) {
            _ = try await flooder.request(.pushJobs(.with { $0.jobs = [huge] }), timeout: .seconds(2))
        }
        #expect(try await client.status().jobs[.dead] == 2)
        await flooder.close()
        await client.close()
    }

    @Test("one peer's reads in flight are bounded: the excess is refused with TOO_MANY_REQUESTS, every one answered")
    func pendingRequests() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1, arguments: Self.limits)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        _ = try await client.finish(
            try await client.pushImport(DemoData.pullRequests(count: 3_000, users: 30), rowsPerJob: 50).batch)

        let peer = try CoordinatorConnection(endpoint: coordinator.process.listenEndpoint)
        let fetch = Tributary_V1_FetchRequest.with { $0.entity = "PullRequest" }
        let outcomes = await withTaskGroup(of: String.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    do {
                        let reply = try await peer.request(.fetchRequest(fetch), timeout: .seconds(60))
                        if case .fetchReply(let answer) = reply.body, answer.objects.ids.count == 3_000 * 16 {
                            return "answered"
                        }
                        return "unexpected reply"
                    } catch let error as ProtocolError where error.code == .tooManyRequests {
                        return error.message.contains("--max-pending-requests") ? "refused" : "unnamed refusal"
                    } catch {
                        return "\(error)"
                    }
                }
            }
            var counts: [String: Int] = [:]
            for await outcome in group { counts[outcome, default: 0] += 1 }
            return counts
        }
        #expect(Set(outcomes.keys).isSubset(of: ["answered", "refused"]), "\(outcomes)")
        #expect(outcomes["refused", default: 0] > 0, "200 fetches at once exceed 2 in flight")
        #expect(outcomes["answered", default: 0] > 0)
        // The coordinator still serves this peer and others.
        let reply = try await peer.request(.fetchRequest(fetch), timeout: .seconds(30))
        guard case .fetchReply = reply.body else { throw ProtocolError(.unknownMessage, "no fetch reply") }
        #expect(try await client.status().jobs[.done] == 60)
        await peer.close()
        await client.close()
    }
}
