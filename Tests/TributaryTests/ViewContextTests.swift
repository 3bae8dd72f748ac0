import Foundation
import Testing

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// The view context: a snapshot, then every commit merged from the feed; and the merge rules themselves.
@Suite("View context: objects kept current by the change feed")
struct ViewContextTests {
    static let model = try! Model.decode(Data(DemoData.modelJSON.utf8))

    /// The pull requests a context holds, by number.
    static func pullRequests(in context: ObjectContext) async throws -> [Int64: String] {
        try await context.perform { context in
            var titles: [Int64: String] = [:]
            for object in context.registeredObjects where object.entity.name == "PullRequest" {
                if case .int(let number) = object["number"], case .string(let title) = object["title"] {
                    titles[number] = title
                }
            }
            return titles
        }
    }

    @Test("a view context in another process than the workers loads the objects, then shows a worker's save")
    func followsWorkerSaves() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let input = DemoData.pullRequests(count: 200, users: 20)
        _ = try await client.finish(try await client.pushImport(input, rowsPerJob: 100).batch)

        let view = try await ViewContext.start(
            feed: coordinator.process.feedEndpoint, jobs: coordinator.process.listenEndpoint, model: Self.model)
        let loaded = try await Self.pullRequests(in: view.context)
        #expect(loaded.count == 200)
        let users = try await view.context.perform { context in
            context.registeredObjects.filter { $0.entity.name == "User" }.count
        }
        #expect(users == 20)

        // A worker renames pull request 1 (the import upserts by number).
        let firstLine = try #require(String(decoding: input, as: UTF8.self).split(separator: "\n").first)
        var row = try #require(try JSONSerialization.jsonObject(with: Data(firstLine.utf8)) as? [String: Any])
        let number = try #require(row["number"] as? Int)
        row["title"] = "Renamed by a worker"
        let renamed = try JSONSerialization.data(withJSONObject: row) + Data("\n".utf8)
        _ = try await client.finish(try await client.pushImport(renamed, rowsPerJob: 1).batch)
        let lastSeq = try await client.status().lastSeq

        let merged = try await withTimeout("the rename to reach the view", .seconds(30)) {
            for try await save in view.changes where save.seq == lastSeq { return save }
            throw TimedOut(what: "the rename's commit")
        }
        #expect(merged.updated.contains { $0.entity == "PullRequest" })
        let now = try await Self.pullRequests(in: view.context)
        #expect(now[Int64(number)] == "Renamed by a worker" && now.count == 200)
        await view.close()
        await client.close()
    }

    @Test("a view context fetches and refetches from the coordinator: matches are registered with stored values")
    func refetch() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        _ = try await client.finish(
            try await client.pushImport(DemoData.pullRequests(count: 200, users: 20), rowsPerJob: 100).batch)
        // Only users are loaded at the start; pull requests come by fetch.
        let view = try await ViewContext.start(
            feed: coordinator.process.feedEndpoint, jobs: coordinator.process.listenEndpoint, model: Self.model,
            entities: ["User"])
        #expect(try await Self.pullRequests(in: view.context).isEmpty)
        let request = FetchRequest(
            entity: "PullRequest", predicate: try FetchPredicate(format: "merged == NO AND additions > %d", 300),
            sortedBy: [FetchSort("additions", ascending: false)], limit: 10)
        let ids = try await view.refetch(request)
        let matching = DemoData.pullRequestValues(count: 200, users: 20).filter { !$0.merged && $0.additions > 300 }
        let additionsByNumber = Dictionary(
            uniqueKeysWithValues: matching.map { (Int64($0.number), Int64($0.additions)) })
        // Equal additions are ordered by id, which follows insertion order: compare the additions in order, and
        // that each object is one of the matches with its own additions.
        let expected = matching.map { Int64($0.additions) }.sorted(by: >).prefix(10)
        let held = try await view.context.perform { context in
            try ids.map { id -> (Int64, Int64) in
                let object = try context.object(with: id)
                guard case .int(let number) = object["number"], case .int(let additions) = object["additions"] else {
                    return (-1, -1)
                }
                return (number, additions)
            }
        }
        #expect(held.map(\.1) == Array(expected))
        #expect(held.allSatisfy { additionsByNumber[$0.0] == $0.1 })
        let count = try await view.context.perform { try $0.count(for: FetchRequest(entity: "PullRequest")) }
        #expect(count == 200)
        await view.close()
        await client.close()
    }

    @Test("merging keeps unsaved local changes, takes the saved values of the rest, and forgets deleted objects")
    func mergeRules() throws {
        let context = ObjectContext(model: Self.model, parent: nil)
        let id = UUID()
        func save(_ seq: UInt64, title: String, additions: Int64) -> DidSave {
            DidSave(parts: [
                .with {
                    $0.seq = seq
                    $0.entity = "PullRequest"
                    $0.updatedIds = id.bytes
                    $0.values = [
                        .with {
                            $0.entity = "PullRequest"
                            $0.operation = .update
                            $0.ids = id.bytes
                            $0.columns = [
                                .with {
                                    $0.name = "title"; $0.strings = [title]
                                },
                                .with {
                                    $0.name = "additions"; $0.ints = [additions]
                                },
                            ]
                        }
                    ]
                }
            ])
        }
        try context.performAndWait {
            try context.mergeChanges(from: save(1, title: "first", additions: 1))
            let object = try context.object(with: ObjectID(entity: "PullRequest", uuid: id))
            #expect(object["title"] == .string("first") && !context.hasChanges, "merged values are not changes")
            object["title"] = .string("mine")
            try context.mergeChanges(from: save(2, title: "theirs", additions: 2))
            #expect(object["title"] == .string("mine"), "an unsaved local change wins")
            #expect(object["additions"] == .int(2), "an unchanged property takes the saved value")

            var delete = Tributary_V1_DidSave()
            delete.seq = 3
            delete.entity = "PullRequest"
            delete.deletedIds = id.bytes
            try context.mergeChanges(from: DidSave(parts: [delete]))
            #expect(context.registeredObjects.isEmpty && object.isDeleted)

            var wrong = save(4, title: "x", additions: 4)
            wrong.values[0].columns[1].ints = []
            #expect(throws: ContextError.self) { try context.mergeChanges(from: wrong) }

            // An object held at a commit's version or a later one (the context's own save, answered before the
            // feed brought it back) is left as it is: the same commit, or an older one, is not applied over it.
            try context.mergeChanges(from: save(10, title: "ten", additions: 10))
            let held = try context.object(with: ObjectID(entity: "PullRequest", uuid: id))
            try context.mergeChanges(from: save(12, title: "twelve", additions: 12))
            try context.mergeChanges(from: save(11, title: "eleven", additions: 11))
            try context.mergeChanges(from: save(12, title: "twelve again", additions: 0))
            #expect(held["title"] == .string("twelve") && held["additions"] == .int(12) && held.version == 12)
        }
    }

    /// A parent whose answer comes after the feed brought a later commit of the saved object: it merges `later`
    /// into the saving context, then answers with `seq` and `resolved`.
    struct LateAnswer: ChangeSetParent {
        let context: @Sendable () -> ObjectContext?
        let later: DidSave
        let seq: UInt64
        let resolved: [Tributary_V1_EntityBatch]

        func save(_ changes: Tributary_V1_ChangeSet) async throws -> SaveReceipt {
            try await context()?.perform { [later] context in try context.mergeChanges(from: later) }
            return SaveReceipt(seq: seq, resolved: resolved)
        }
    }

    @Test("a save's answer that comes after a later commit of its objects leaves them at the later version")
    func lateAnswerKeepsLaterCommit() async throws {
        let id = UUID()
        func commit(_ seq: UInt64, name: String) -> DidSave {
            DidSave(parts: [
                .with {
                    $0.seq = seq
                    $0.entity = "User"
                    $0.updatedIds = id.bytes
                    $0.values = [
                        .with {
                            $0.entity = "User"
                            $0.operation = .update
                            $0.ids = id.bytes
                            // Every attribute: the object is whole, not a fault to load from the parent.
                            $0.columns = [
                                .with { ($0.name, $0.strings) = ("login", ["ada"]) },
                                .with { ($0.name, $0.strings) = ("name", [name]) },
                            ]
                        }
                    ]
                }
            ])
        }
        let later = commit(7, name: "from seq 7")
        let resolvedAt5 = Tributary_V1_EntityBatch.with {
            $0.entity = "User"
            $0.operation = .update
            $0.ids = id.bytes
            $0.versions = [5]
            $0.columns = [.with { ($0.name, $0.strings) = ("name", ["resolved at 5"]) }]
        }
        let holder = Locked<ObjectContext?>(nil)  // the parent needs the context it is the parent of
        let context = ObjectContext(
            model: Self.model,
            parent: LateAnswer(context: { holder.value }, later: later, seq: 5, resolved: [resolvedAt5]))
        holder.withLock { $0 = context }
        let first = commit(3, name: "original")
        try await context.perform { context in
            try context.mergeChanges(from: first)
            try context.object(with: ObjectID(entity: "User", uuid: id))["name"] = .string("mine")
        }
        let receipt = try await context.save()
        #expect(receipt.seq == 5)
        let (name, version) = try await context.perform { context in
            let user = try context.object(with: ObjectID(entity: "User", uuid: id))
            return (user["name"], user.version)
        }
        #expect(name == .string("from seq 7") && version == 7, "\(String(describing: name)) at \(version)")
    }
}
