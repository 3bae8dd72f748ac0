import Foundation
import GRDB
import Testing

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Batch updates and deletes (Core Data's `NSBatchUpdateRequest` / `NSBatchDeleteRequest`) run in a real
/// coordinator's writer; the store is read through a connection of the test's own.
@Suite("Batch changes at the root", .serialized)
struct BatchChangeTests {
    static let model = ViewContextTests.model

    /// How many rows `sql` (a `SELECT COUNT(*)`) counts in the store.
    static func count(_ storePath: String, _ sql: String) throws -> Int {
        try DatabaseQueue(path: storePath).read { db in try Int.fetchOne(db, sql: sql) ?? 0 }
    }

    /// The ids `sql` (a `SELECT id …`) reads from the store, in its order.
    static func ids(_ storePath: String, _ sql: String) throws -> [UUID] {
        try DatabaseQueue(path: storePath).read { db in
            try Data.fetchAll(db, sql: sql).map { UUID(bytes: $0, at: $0.startIndex) }
        }
    }

    /// A context whose parent is the coordinator's store.
    static func context(_ coordinator: TestCoordinator, model: Model = model) throws -> ObjectContext {
        let connection = try CoordinatorConnection(endpoint: coordinator.process.listenEndpoint)
        return ObjectContext(model: model, parent: CoordinatorStore(connection: connection))
    }

    /// Inserts `count` pull requests numbered from 0, `perSave` to a save.
    static func insertPullRequests(_ count: Int, perSave: Int = 20_000, into context: ObjectContext) async throws {
        for start in stride(from: 0, to: count, by: perSave) {
            try await context.perform { context in
                for number in start..<min(count, start + perSave) {
                    let pull = try context.insert("PullRequest")
                    pull["number"] = .int(Int64(number))
                    pull["title"] = .string("PR \(number)")
                    pull["merged"] = .bool(false)
                    pull["additions"] = .int(Int64(number % 100))
                    pull["createdAt"] = .date(Date(timeIntervalSince1970: 1_700_000_000))
                }
            }
            try await context.save()
            try await context.perform { $0.reset() }
        }
    }

    @Test("a batch update of 10,000 of 100,000 objects is one commit, one didSave a third view merges")
    func batchUpdate() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let (feed, jobs) = (coordinator.process.feedEndpoint, coordinator.process.listenEndpoint)
        let writer = try Self.context(coordinator)
        try await Self.insertPullRequests(100_000, into: writer)
        let view = try await ViewContext.start(
            feed: feed, jobs: jobs, model: Self.model, entities: ["PullRequest"], name: "third")

        let selected = try FetchPredicate(format: "number >= %d AND number < %d", 40_000, 50_000)
        let result = try await writer.execute(
            BatchUpdate(entity: "PullRequest", predicate: selected, set: ["title": .string("batch"), "score": nil]))
        #expect(result.count == 10_000 && result.commits.count == 1)
        let seq = try #require(result.commits.first)
        #expect(try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM PullRequest") == 100_000)
        #expect(
            try Self.count(
                coordinator.storePath,
                "SELECT COUNT(*) FROM PullRequest WHERE title = 'batch' AND _version = \(seq) AND number BETWEEN 40000 AND 49999"
            ) == 10_000)
        #expect(
            try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM PullRequest WHERE _version = \(seq)") == 10_000)
        #expect(
            try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM tributary_history WHERE seq >= \(seq)") == 1)

        // The view merges the one didSave that lists every changed object.
        let didSave = try await withTimeout("the batch update's didSave", .seconds(60)) {
            for try await save in view.changes where save.seq >= seq { return save }
            throw TimedOut(what: "didSave \(seq)")
        }
        #expect(didSave.seq == seq && didSave.updated.count == 10_000 && didSave.inserted.isEmpty)
        let held = try await view.context.perform { context in
            context.registeredObjects.filter { $0["title"] == .string("batch") && $0.version == seq }.count
        }
        #expect(held == 10_000)

        // Several commits when more match than one takes: each commit goes on after the last id of the one before.
        let chunked = try await writer.execute(
            BatchUpdate(
                entity: "PullRequest", predicate: try FetchPredicate(format: "additions == %d", 7),
                set: ["merged": .bool(true)], objectsPerCommit: 300))
        #expect(chunked.count == 1_000 && chunked.commits.count == 4)
        #expect(Set(chunked.ids).count == 1_000)
        #expect(try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM PullRequest WHERE merged = 1") == 1_000)
        await view.close()
    }

    @Test("a batch delete applies nullify, cascade and deny; a refused one changes nothing")
    func batchDelete() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, modelJSON: DeleteRuleTests.modelJSON)
        defer { Task { await coordinator.process.stop() } }
        let model = try Model.decode(Data(DeleteRuleTests.modelJSON.utf8))
        let context = try Self.context(coordinator, model: model)
        try await context.perform { context in
            func named(_ entity: String, _ key: String, _ value: String) throws -> ManagedObject {
                let object = try context.insert(entity)
                try object.setValue(.string(value), for: key)
                return object
            }
            let (ann, bob) = (try named("User", "login", "ann"), try named("User", "login", "bob"))
            let lock = try named("Lock", "reason", "legal hold")
            let files = try (0..<4).map { try named("File", "path", "f\($0)") }
            try files[3].setDestination(lock, for: "lock")
            let docs = try named("Folder", "name", "docs")
            try docs.setDestinations([files[0], files[1]], for: "files")
            try docs.setDestination(ann, for: "owner")
            let held = try named("Folder", "name", "held")
            try held.setDestinations([files[2], files[3]], for: "files")
            try held.setDestination(bob, for: "owner")
        }
        try await context.save()
        let store = coordinator.storePath

        // Nullify: the folder that ann owned stays, without an owner.
        let users = try await context.execute(
            BatchDelete(entity: "User", predicate: try FetchPredicate(format: "login == %@", "ann")))
        #expect(users.count == 1)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM User") == 1)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM Folder WHERE name = 'docs' AND owner IS NULL") == 1)

        // Deny, reached through a cascade: refused whole, naming the rule; nothing changes.
        let history = try Self.count(store, "SELECT COUNT(*) FROM tributary_history")
        await #expect {
            try await context.execute(BatchDelete(entity: "Folder"))
        } throws: { error in
            "\(error)".contains("deny") && "\(error)".contains("lock")
        }
        #expect(try Self.count(store, "SELECT COUNT(*) FROM Folder") == 2)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM File") == 4)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM tributary_history") == history)

        // Cascade: the folder's files go with it, in the same commit.
        let docs = try await context.execute(
            BatchDelete(entity: "Folder", predicate: try FetchPredicate(format: "name == %@", "docs")))
        #expect(docs.count == 1 && docs.commits.count == 1)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM Folder") == 1)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM File WHERE path IN ('f0', 'f1')") == 0)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM File") == 2)
        // The objects the context held are gone from it.
        let left = try await context.perform { context in
            context.registeredObjects.filter { ["Folder", "User"].contains($0.entity.name) }.count
        }
        #expect(left == 2, "held and bob")
    }

    @Test("a batch change sent again with its save_id gets its first answer, ids included, and is not applied twice")
    func sentTwice() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        try await Self.insertPullRequests(10, into: try Self.context(coordinator))
        let connection = try CoordinatorConnection(endpoint: coordinator.process.listenEndpoint)
        let save = Tributary_V1_SaveChanges.with {
            $0.saveID = UUID().bytes
            $0.batchChange = .with {
                $0.entity = "PullRequest"
                $0.operation = .delete
                $0.predicate = try! FetchPredicate(format: "number < %d", 3).wire
            }
        }
        func send() async throws -> Tributary_V1_SaveAck {
            let reply = try await connection.request(.saveChanges(save))
            guard case .saveAck(let ack) = reply.body else { throw TimedOut(what: "a SaveAck") }
            return ack
        }
        let first = try await send()
        let history = try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM tributary_history")
        let again = try await send()
        #expect(first.batchIds.count == 3 * 16 && !first.duplicate && !first.batchMore)
        #expect(again.duplicate && again.seq == first.seq && again.batchIds == first.batchIds)
        #expect(try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM tributary_history") == history)
        #expect(try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM PullRequest") == 7)
        await connection.close()
    }

    @Test("a batch update's value counts once per object against the change-set bytes: large values take more commits")
    func largeValues() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, arguments: ["--max-change-set-mb", "1"])
        defer { Task { await coordinator.process.stop() } }
        let context = try Self.context(coordinator)
        try await Self.insertPullRequests(2_000, perSave: 1_000, into: context)
        let long = String(repeating: "x", count: 2_000)
        let result = try await context.execute(BatchUpdate(entity: "PullRequest", set: ["title": .string(long)]))
        // About 2,020 bytes an object: at most 519 objects in a commit of 1 MiB.
        #expect(result.count == 2_000 && result.commits.count == 4, "\(result.commits)")
        let store = coordinator.storePath
        #expect(try Self.count(store, "SELECT COUNT(*) FROM PullRequest WHERE length(title) = 2000") == 2_000)
        #expect(
            try Self.count(
                store,
                "SELECT COUNT(*) FROM tributary_history WHERE length(record) > 1200000 AND seq >= \(result.commits[0])"
            ) == 0)
    }

    /// A job that closes the pull requests with few additions by a batch update from its context, 40 a commit.
    struct CloseSmall: JobHandler {
        let kind = "close-small"
        func run(_ job: JobRun) async throws {
            let context = job.makeContext()
            let small = try FetchPredicate(format: "additions < %d", 10)
            let result = try await context.execute(
                BatchUpdate(entity: "PullRequest", predicate: small, set: ["merged": .bool(true)], objectsPerCommit: 40)
            )
            try await job.complete(progress: UInt64(result.count))
        }
    }

    @Test("a job runs a batch update from its context: each commit one of the job's batches, the job done after")
    func fromAJob() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        try await Self.insertPullRequests(1_000, into: try Self.context(coordinator))
        let worker = InProcessWorker.start(endpoint: coordinator.process.listenEndpoint, handlers: [CloseSmall()])
        defer { worker.cancel() }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let status = try await client.finish(try await client.push([JobSpec(kind: "close-small")]).batch)
        #expect(status.doneJobs == 1 && status.doneRows == 100, "\(status)")
        let store = coordinator.storePath
        #expect(try Self.count(store, "SELECT COUNT(*) FROM PullRequest WHERE merged = 1") == 100)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM PullRequest WHERE merged = 1 AND additions >= 10") == 0)
        // 100 objects at 40 a commit: three of the job's batches, then its completion.
        #expect(try Self.count(store, "SELECT COUNT(*) FROM tributary_history WHERE job_id IS NOT NULL") == 3)
        #expect(try Self.count(store, "SELECT committed_batches FROM tributary_jobs") == 4)
        await client.close()
    }

    @Test("bad batch changes are refused naming the problem, and change nothing")
    func refusals() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let context = try Self.context(coordinator)
        try await Self.insertPullRequests(10, into: context)
        let store = coordinator.storePath
        let history = try Self.count(store, "SELECT COUNT(*) FROM tributary_history")
        func refused(_ request: BatchUpdate, _ words: [String]) async {
            await #expect {
                try await context.execute(request)
            } throws: { error in
                words.allSatisfy { "\(error)".contains($0) }
            }
        }
        await refused(BatchUpdate(entity: "Nope", set: ["title": .string("x")]), ["unknown entity", "Nope"])
        await refused(BatchUpdate(entity: "PullRequest", set: ["nope": .string("x")]), ["nope"])
        await refused(BatchUpdate(entity: "PullRequest", set: ["number": .string("x")]), ["number", "int"])
        await refused(BatchUpdate(entity: "PullRequest", set: ["title": nil]), ["title", "not optional"])
        await refused(BatchUpdate(entity: "PullRequest", set: ["reviewers": nil]), ["reviewers", "to-many"])
        // Every pull request numbered alike breaks the uniqueness constraint: the commit is refused whole.
        await refused(BatchUpdate(entity: "PullRequest", set: ["number": .int(1)]), ["number"])

        // What a client sends without the Swift checks is refused by the coordinator, naming it.
        let connection = try CoordinatorConnection(endpoint: coordinator.process.listenEndpoint)
        func send(_ change: Tributary_V1_BatchChange) async throws -> String {
            do {
                _ = try await connection.request(
                    .saveChanges(
                        .with {
                            $0.saveID = UUID().bytes
                            $0.batchChange = change
                        }))
                return "accepted"
            } catch let error as ProtocolError {
                return "\(error.code): \(error.message)"
            }
        }
        var change = Tributary_V1_BatchChange()
        change.entity = "PullRequest"
        change.operation = .update
        #expect(try await send(change).contains("sets no values"))
        change.values = [
            .with {
                $0.name = "title"; $0.strings = ["a", "b"]
            }
        ]
        #expect(try await send(change).contains("must be one row, not 2"))
        change.operation = .insert
        #expect(try await send(change).contains("UPDATE or DELETE"))
        change.operation = .delete
        change.values = []
        change.afterID = Data([1, 2, 3])
        #expect(try await send(change).contains("after_id has 3 bytes"))
        change.afterID = Data()
        change.predicate = .with {
            $0.comparison = .with {
                $0.key = "nope"; $0.operator = .equal; $0.values = [.with { $0.intValue = 1 }]
            }
        }
        #expect(try await send(change).contains("nope"))
        #expect(try Self.count(store, "SELECT COUNT(*) FROM PullRequest") == 10)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM tributary_history") == history)
        await connection.close()
    }

    @Test("tributary update and delete change what --where selects, print what they did, and refuse bad flags")
    func commandLine() async throws {
        try await FetchCommandTests.withPullRequests { coordinator, endpoints in
            let jobs = Array(endpoints.prefix(2))
            let store = coordinator.storePath
            let open = #"state == "open" AND additions > 200"#
            let expected = try Self.count(
                store, "SELECT COUNT(*) FROM PullRequest WHERE state = 'open' AND additions > 200")

            let dry = try await Binaries.run(
                "tributary", ["delete", "--entity", "PullRequest", "--where", open, "--dry-run"] + jobs)
            #expect(
                dry.status == 0
                    && dry.output == "\(expected) PullRequest object(s) match; nothing was deleted (--dry-run)",
                "\(dry)")
            #expect(try Self.count(store, "SELECT COUNT(*) FROM PullRequest") == 12)

            let updated = try await Binaries.run(
                "tributary",
                [
                    "update", "--entity", "PullRequest", "--where", open, "--set", "title=Big", "--set", "merged=true",
                    "--set", "createdAt=2025-01-02T03:04:05Z", "--clear", "score", "--json",
                ] + jobs)
            #expect(updated.status == 0, "\(updated.error)")
            let answer = try #require(
                try JSONSerialization.jsonObject(with: Data(updated.output.utf8)) as? [String: Any])
            #expect(answer["count"] as? Int == expected && (answer["commits"] as? [Int])?.count == 1)
            #expect(
                try Self.count(
                    store,
                    "SELECT COUNT(*) FROM PullRequest WHERE title = 'Big' AND merged = 1 AND score IS NULL AND createdAt = 1735787045"
                ) == expected)
            let ids = try await FetchCommandTests.ids(
                try DatabaseQueue(path: store), "SELECT id FROM PullRequest WHERE title = 'Big' ORDER BY id")
            #expect(answer["ids"] as? [String] == ids)

            let deleted = try await Binaries.run(
                "tributary",
                ["delete", "--entity", "PullRequest", "--where", #"title == "Big""#, "--per-commit", "2"] + jobs)
            #expect(deleted.status == 0, "\(deleted.error)")
            #expect(
                deleted.output.hasPrefix(
                    "deleted \(expected) PullRequest object(s) in \((expected + 1) / 2) commit(s)"), "\(deleted.output)"
            )
            #expect(try Self.count(store, "SELECT COUNT(*) FROM PullRequest") == 12 - expected)

            // Bad flags and values are refused, naming them; nothing changes.
            for (arguments, words) in [
                (
                    ["update", "--entity", "PullRequest", "--set", "additions=many"],
                    ["additions", "'many' is not a int"]
                ),
                (["update", "--entity", "PullRequest", "--set", "nope=1"], ["nope", "no such attribute"]),
                (["update", "--entity", "PullRequest", "--set", "reviewers=x"], ["to-many"]),
                (["update", "--entity", "PullRequest"], ["--set"]),
                (["delete", "--entity", "PullRequest", "--where", "number =="], ["--where"]),
                (["delete", "--entity", "Nope"], ["Nope"]),
                (["delete", "--entity", "PullRequest", "--per-commit", "0"], ["--per-commit"]),
            ] {
                let refused = try await Binaries.run("tributary", arguments + jobs)
                #expect(
                    refused.status != 0 && words.allSatisfy { refused.error.contains($0) },
                    "\(arguments): \(refused.error)")
            }
            #expect(try Self.count(store, "SELECT COUNT(*) FROM PullRequest") == 12 - expected)
        }
    }
}
