import Foundation
import GRDB
import Testing
import TributaryCommandSupport

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Contexts whose parent is the coordinator save into the root without a job (the seeds' UI context): against a
/// real coordinator process, with the store read through a connection of the test's own.
@Suite("View contexts that save into the root", .serialized)
struct ViewContextSaveTests {
    static let model = ViewContextTests.model

    /// The `User` rows of the store: login → (name, version).
    static func users(_ storePath: String) throws -> [String: (name: String?, version: Int64)] {
        try DatabaseQueue(path: storePath).read { db in
            var users: [String: (name: String?, version: Int64)] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT login, name, _version FROM User") {
                users[row["login"]] = (row["name"], row["_version"])
            }
            return users
        }
    }

    /// How many rows `sql` (a `SELECT COUNT(*)`) counts in the store.
    static func count(_ storePath: String, _ sql: String) throws -> Int {
        try DatabaseQueue(path: storePath).read { db in try Int.fetchOne(db, sql: sql) ?? 0 }
    }

    /// The user `login` that `context` holds, fetched when it is not registered yet.
    static func user(_ login: String, in context: ObjectContext) throws -> ManagedObject {
        let request = FetchRequest(entity: "User", predicate: try FetchPredicate(format: "login == %@", login))
        return try #require(try context.fetch(request).first)
    }

    /// The user `login` as `context` holds it, without asking the store.
    static func registered(_ login: String, in context: ObjectContext) -> ManagedObject? {
        context.registeredObjects.first { $0.entity.name == "User" && $0["login"] == .string(login) }
    }

    /// Waits for `view` to announce the commit `seq`.
    static func waitForCommit(_ seq: UInt64, in view: ViewContext) async throws {
        try await withTimeout("commit \(seq) to reach the view", .seconds(30)) {
            for try await save in view.changes where save.seq >= seq { return }
            throw TimedOut(what: "commit \(seq)")
        }
    }

    @Test("a view saves without a job; another view shows the change; the saver holds the committed version")
    func saveReachesOtherViews() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let (feed, jobs) = (coordinator.process.feedEndpoint, coordinator.process.listenEndpoint)
        let a = try await ViewContext.start(feed: feed, jobs: jobs, model: Self.model, entities: ["User"], name: "a")
        let b = try await ViewContext.start(feed: feed, jobs: jobs, model: Self.model, entities: ["User"], name: "b")

        try await a.context.perform { context in
            let ada = try context.insert("User")
            ada["login"] = .string("ada")
            ada["name"] = .string("Ada")
        }
        let inserted = try await a.save()
        #expect(inserted.seq > 0 && !inserted.isDuplicate)
        #expect(try Self.users(coordinator.storePath)["ada"]?.name == "Ada")
        #expect(try Self.users(coordinator.storePath)["ada"]?.version == Int64(inserted.seq))
        #expect(try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM tributary_jobs") == 0, "no job was made")
        try await Self.waitForCommit(inserted.seq, in: b)
        #expect(try await b.context.perform { try Self.user("ada", in: $0)["name"] } == .string("Ada"))

        try await a.context.perform { context in try Self.user("ada", in: context)["name"] = .string("Ada Lovelace") }
        let edited = try await a.save()
        #expect(edited.seq > inserted.seq)
        #expect(try await a.context.perform { try Self.user("ada", in: $0).version } == edited.seq)
        #expect(try Self.users(coordinator.storePath)["ada"]?.version == Int64(edited.seq))
        try await Self.waitForCommit(edited.seq, in: b)
        #expect(try await b.context.perform { try Self.user("ada", in: $0)["name"] } == .string("Ada Lovelace"))
        // The saver's own commits, come back on the feed, left its object as its save made it.
        try await Self.waitForCommit(edited.seq, in: a)
        let held = try await a.context.perform { context in
            let ada = try Self.user("ada", in: context)
            return (ada["name"], ada.version, context.hasChanges)
        }
        #expect(held.0 == .string("Ada Lovelace") && held.1 == edited.seq && !held.2)

        // Nothing to save sends nothing.
        let history = try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM tributary_history")
        #expect(try await a.save().seq == 0)
        #expect(try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM tributary_history") == history)
        await a.close()
        await b.close()
    }

    @Test("a child of a view context saves into it, in memory; the view's save sends both, as one commit")
    func nestedContexts() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let view = try await ViewContext.start(
            feed: coordinator.process.feedEndpoint, jobs: coordinator.process.listenEndpoint, model: Self.model,
            entities: ["User"])
        let child = ObjectContext(model: Self.model, parent: view.context, name: "editor")
        try await child.perform { context in try context.insert("User")["login"] = .string("dee") }
        #expect(try await child.save().seq == 0, "a child's save stays in the process")
        #expect(try Self.users(coordinator.storePath).isEmpty)
        try await view.context.perform { context in try context.insert("User")["login"] = .string("eve") }
        let receipt = try await view.save()
        #expect(receipt.seq > 0)
        let stored = try Self.users(coordinator.storePath)
        #expect(Set(stored.keys) == ["dee", "eve"])
        #expect(stored.values.allSatisfy { $0.version == Int64(receipt.seq) }, "one commit")
        #expect(try await view.context.perform { !$0.hasChanges })
        await view.close()
    }

    @Test("two contexts edit the same user: .error refuses and keeps the changes; objectTrump and storeTrump merge")
    func conflicts() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let jobs = coordinator.process.listenEndpoint
        let a = try await ViewContext.start(
            feed: coordinator.process.feedEndpoint, jobs: jobs, model: Self.model, entities: ["User"], name: "a")
        try await a.context.perform { context in
            let bob = try context.insert("User")
            bob["login"] = .string("bob")
            bob["name"] = .string("Bob")
        }
        try await a.save()
        // A context that reads the user once and does not follow the feed: its version stays the one it read.
        let connection = try CoordinatorConnection(endpoint: jobs)
        func staleContext(_ policy: MergePolicy) async throws -> ObjectContext {
            let context = ObjectContext(model: Self.model, parent: CoordinatorStore(connection: connection))
            try await context.perform { context in
                context.mergePolicy = policy
                _ = try Self.user("bob", in: context)
            }
            return context
        }
        // Edits the user as the context holds it (a fetch would refresh an unchanged object to the stored version).
        func rename(_ context: ObjectContext, _ name: String) async throws {
            try await context.perform { context in
                try #require(Self.registered("bob", in: context))["name"] = .string(name)
            }
        }

        let refusing = try await staleContext(.error)
        try await rename(a.context, "Bob by A")
        try await a.save()
        try await rename(refusing, "Bob by B")
        let error = await #expect(throws: MergeConflictError.self) { try await refusing.save() }
        #expect(error?.conflicts.first?.objectID.entity == "User", "\(String(describing: error))")
        #expect(try await refusing.perform { $0.hasChanges }, "the refused changes stay pending")
        #expect(try Self.users(coordinator.storePath)["bob"]?.name == "Bob by A")

        // objectTrump: the context's change wins.
        try await refusing.perform { $0.mergePolicy = .objectTrump }
        let trumped = try await refusing.save()
        #expect(trumped.seq > 0)
        #expect(try Self.users(coordinator.storePath)["bob"]?.name == "Bob by B")
        // a merges that commit from the feed before it edits again: its next save is then not a conflict under
        // `.error` (on a loaded machine the feed can be slower than the next line).
        try await Self.waitForCommit(trumped.seq, in: a)

        // storeTrump: the store changed the name since this context read it, so the store's value stays, and the
        // context takes it.
        let yielding = try await staleContext(.storeTrump)
        try await rename(a.context, "Bob by A again")
        try await a.save()
        try await rename(yielding, "Bob by C")
        try await yielding.save()
        #expect(try Self.users(coordinator.storePath)["bob"]?.name == "Bob by A again")
        #expect(try await yielding.perform { Self.registered("bob", in: $0)?["name"] } == .string("Bob by A again"))
        await a.close()
        await connection.close()
    }

    @Test("a save whose answer is lost (the coordinator SIGKILLed after its commit) is sent again and applied once")
    func lostAnswer() async throws {
        let directory = try TemporaryDirectory()
        let (listenPort, feedPort) = try ChaosTests.freePorts()
        let modelPath = try directory.write("model.json", DemoData.modelJSON)
        let storePath = directory.path("store.sqlite")
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: try directory.write("coordinator.log", "")))
        func startCoordinator() async throws -> CoordinatorProcess {
            try await CoordinatorProcess.start(
                executable: Binaries.url("tributary-coordinator"),
                arguments: [
                    "--store", storePath, "--model", modelPath, "--listen", "tcp://127.0.0.1:\(listenPort)",
                    "--feed", "tcp://127.0.0.1:\(feedPort)", "--log-level", "warning",
                ], log: log)
        }
        var coordinator = try await startCoordinator()
        // The context reaches the coordinator through a tap that can drop the answers.
        let tap = try TCPTap(port: String(listenPort))
        let connection = try CoordinatorConnection(endpoint: tap.endpoint)
        var store = CoordinatorStore(connection: connection)
        store.attemptTimeout = .milliseconds(500)
        let context = ObjectContext(model: Self.model, parent: store)
        // Connected: a fetch is answered through the gate.
        _ = try await context.perform { try $0.fetch(FetchRequest(entity: "User")).count }

        try await context.perform { context in
            let cy = try context.insert("User")
            cy["login"] = .string("cy")
            cy["name"] = .string("Cy")
        }
        try await tap.dropAnswers()
        let saving = Task { try await context.save() }
        try await waitUntil("the save to be committed") { try Self.users(storePath)["cy"] != nil }
        let committed = try Self.count(
            storePath, "SELECT MAX(seq) FROM tributary_history")
        kill(coordinator.pid, SIGKILL)
        _ = await coordinator.stop()
        coordinator = try await startCoordinator()
        defer { Task { [coordinator] in await coordinator.stop() } }
        try await tap.forwardAnswers()

        let receipt = try await withTimeout("the save to be answered", .seconds(60)) { try await saving.value }
        #expect(receipt.isDuplicate && receipt.seq == UInt64(committed), "\(receipt.seq) against \(committed)")
        #expect(try Self.count(storePath, "SELECT COUNT(*) FROM User WHERE login = 'cy'") == 1)
        #expect(try Self.users(storePath)["cy"]?.version == Int64(committed))
        #expect(try Self.count(storePath, "SELECT COUNT(*) FROM tributary_history") == 1, "one commit, not two")
        #expect(try await context.perform { try Self.user("cy", in: $0).version } == UInt64(committed))
        await connection.close()
    }

    @Test("a save left without an answer is in doubt: kept whole, sent again first with its id, applied once")
    func saveInDoubt() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let port = try #require(coordinator.process.listenEndpoint.split(separator: ":").last)
        let tap = try TCPTap(port: String(port))
        let connection = try CoordinatorConnection(endpoint: tap.endpoint)
        let store = CoordinatorStore(
            connection: connection, saveTimeout: .milliseconds(800), attemptTimeout: .milliseconds(200))
        let context = ObjectContext(model: Self.model, parent: store)
        try await context.perform { context in
            let dee = try context.insert("User")
            dee["login"] = .string("dee")
        }
        let inserted = try await context.save()

        try await context.perform { context in try Self.user("dee", in: context)["name"] = .string("Dee") }
        try await tap.dropAnswers()
        await #expect(throws: SaveInDoubtError.self) { try await context.save() }
        #expect(try await context.perform { ($0.hasSaveInDoubt, $0.hasChanges) } == (true, false))
        try await waitUntil("the unanswered save to be committed") {
            try Self.users(coordinator.storePath)["dee"]?.name == "Dee"
        }
        let committed = try Self.users(coordinator.storePath)["dee"]?.version ?? 0

        // A later edit of the same object: the unanswered save goes first, as it was sent, and gets its first
        // answer; sent again under a new id with the stale version it read, it would conflict with itself.
        try await tap.forwardAnswers()
        try await context.perform { context in
            try Self.user("dee", in: context)["name"] = .string("Dee Dee")
            let eve = try context.insert("User")
            eve["login"] = .string("eve")
        }
        let receipt = try await context.save()
        #expect(Int64(receipt.seq) > committed && !receipt.isDuplicate)
        let users = try Self.users(coordinator.storePath)
        #expect(users["dee"]?.name == "Dee Dee" && users["dee"]?.version == Int64(receipt.seq))
        #expect(users["eve"] != nil && users.count == 2)
        #expect(
            try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM tributary_history") == 3,
            "the insert, the unanswered save once, the later one")
        #expect(
            try await context.perform { ($0.hasSaveInDoubt, try Self.user("dee", in: $0).version) }
                == (false, receipt.seq))
        #expect(inserted.seq < UInt64(committed))
        await connection.close()
    }

    @Test("under CURVE a subscriber key may not save, a client key may; a refused save changes nothing")
    func roles() async throws {
        let directory = try TemporaryDirectory()
        let keys = try SecurityTests.Keys(in: directory)
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, arguments: keys.coordinatorArguments)
        defer { Task { await coordinator.process.stop() } }
        func save(as name: String, login: String) async throws -> SaveReceipt {
            let connection = try CoordinatorConnection(
                endpoint: coordinator.process.listenEndpoint, curve: try keys.peer(name))
            defer { Task { await connection.close() } }
            let context = ObjectContext(model: Self.model, parent: CoordinatorStore(connection: connection))
            try await context.perform { context in try context.insert("User")["login"] = .string(login) }
            return try await context.save()
        }
        let refused = await #expect(throws: ProtocolError.self) { try await save(as: "s1", login: "sub") }
        #expect(refused?.code == .forbidden, "\(String(describing: refused))")
        #expect(refused?.message.contains("a subscriber key may not send saveChanges") == true)
        #expect(try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM User") == 0)
        #expect(try await save(as: "c1", login: "client").seq > 0)
        #expect(try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM User") == 1)
    }

    @Test("a save_id that is not 16 bytes, or one on a job's save, is refused with a message naming it")
    func badSaveIDs() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let connection = try CoordinatorConnection(endpoint: coordinator.process.listenEndpoint)
        let short = await #expect(throws: ProtocolError.self) {
            _ = try await connection.request(.saveChanges(.with { $0.saveID = Data(repeating: 1, count: 3) }))
        }
        #expect(short?.code == .invalidRequest && short?.message.contains("save_id has 3 bytes") == true)
        let withJob = await #expect(throws: ProtocolError.self) {
            _ = try await connection.request(
                .saveChanges(
                    .with {
                        $0.saveID = UUID().bytes
                        $0.jobID = 7
                    }))
        }
        #expect(withJob?.code == .invalidRequest && withJob?.message.contains("job_id must be 0") == true)
        let withAttempt = await #expect(throws: ProtocolError.self) {
            _ = try await connection.request(
                .saveChanges(
                    .with {
                        $0.saveID = UUID().bytes
                        $0.batchIndex = 2
                    }))
        }
        #expect(
            withAttempt?.code == .invalidRequest && withAttempt?.message.contains("no attempt, batch index") == true)
        // Still serving.
        _ = try await connection.request(.statusRequest(.init()))
        await connection.close()
    }
}

extension ViewContextSaveTests {
    @Test("two processes each with a view context: A edits and saves, B's view shows it, A holds the committed version")
    func twoProcesses() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let (feed, listen) = (coordinator.process.feedEndpoint, coordinator.process.listenEndpoint)
        let seeding = ObjectContext(
            model: Self.model, parent: CoordinatorStore(connection: try CoordinatorConnection(endpoint: listen)))
        try await seeding.perform { context in
            let ada = try context.insert("User")
            ada["login"] = .string("ada")
            ada["name"] = .string("Ada")
        }
        try await seeding.save()
        let a = try await ViewEditorProcess.start(listen: listen, feed: feed, entities: ["User"])
        defer { a.stop() }
        let b = try await ViewEditorProcess.start(listen: listen, feed: feed, entities: ["User"])
        defer { b.stop() }
        #expect(try await b.send("show User login=ada").contains(#""name":"Ada""#))

        let saved = try await a.send("edit User login=ada name=Ada Lovelace")
        let seq = try #require(saved.hasPrefix("saved ") ? Int64(saved.dropFirst(6)) : nil, "\(saved)")
        #expect(try Self.users(coordinator.storePath)["ada"]?.name == "Ada Lovelace")
        #expect(try Self.users(coordinator.storePath)["ada"]?.version == seq)
        #expect(try await b.send("wait \(seq)") == "merged \(seq)")
        let shown = try await b.send("show User login=ada")
        #expect(shown.contains(#""name":"Ada Lovelace""#) && shown.contains(#""version":\#(seq)"#), "\(shown)")
        let held = try await a.send("show User login=ada")
        #expect(held.contains(#""name":"Ada Lovelace""#) && held.contains(#""version":\#(seq)"#), "\(held)")
        // B saves over A's commit, having merged it: no conflict under `.error`, and A follows.
        let again = try await b.send("edit User login=ada name=Countess")
        let next = try #require(again.hasPrefix("saved ") ? Int64(again.dropFirst(6)) : nil, "\(again)")
        #expect(try await a.send("wait \(next)") == "merged \(next)")
        #expect(try await a.send("show User login=ada").contains(#""name":"Countess""#))
        #expect(try Self.count(coordinator.storePath, "SELECT COUNT(*) FROM User") == 1)
    }
}
