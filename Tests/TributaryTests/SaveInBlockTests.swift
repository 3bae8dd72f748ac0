import Foundation
import GRDB
import Synchronization
import Testing
import TributaryCommandSupport

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryProtocol

/// A context saving inside one of its blocks (`try context.save()` in `performAndWait`, Core Data's pattern): the
/// edit and the save in one block, the context settled when it returns; against a real coordinator process, and
/// against a store in the process for the orders a network cannot stage.
@Suite("Saves inside a context's block", .serialized)
struct SaveInBlockTests {
    static let model = ViewContextTests.model

    /// Inserts the user `login` and saves, in one block of `context` run from a thread of the test's own.
    static func insertAndSaveInABlock(_ login: String, in context: ObjectContext) async throws
        -> Result<SaveReceipt, any Error>
    {
        try await onOwnThread {
            try context.performAndWait {
                try context.insert("User")["login"] = .string(login)
                return Result { try context.save() }
            }
        }
    }

    /// Calls the blocking `save()` from a synchronous function (an async caller gets the async one).
    static func saveOutsideItsQueue(_ context: ObjectContext) throws -> SaveReceipt {
        try context.save()
    }

    @Test("a view edits and saves in one block: committed, the object at the commit's version, the feed shows it")
    func viewSavesInABlock() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let (feed, jobs) = (coordinator.process.feedEndpoint, coordinator.process.listenEndpoint)
        let view = try await ViewContext.start(feed: feed, jobs: jobs, model: Self.model, entities: ["User"])
        let context = view.context

        let (inserted, edited) = try await onOwnThread {
            let inserted = try context.performAndWait {
                try context.insert("User")["login"] = .string("ada")
                return try context.save()
            }
            let edited = try context.performAndWait {
                try ViewContextSaveTests.user("ada", in: context)["name"] = .string("Ada Lovelace")
                return try context.save()
            }
            return (inserted, edited)
        }
        #expect(inserted.seq > 0 && edited.seq > inserted.seq)
        let stored = try ViewContextSaveTests.users(coordinator.storePath)["ada"]
        #expect(stored?.name == "Ada Lovelace" && stored?.version == Int64(edited.seq))
        let held = try await context.perform { context in
            let ada = try ViewContextSaveTests.user("ada", in: context)
            return (ada.version, context.hasChanges)
        }
        #expect(held == (edited.seq, false))
        try await ViewContextSaveTests.waitForCommit(edited.seq, in: view)

        // Nothing to save sends nothing; outside the queue it is refused, naming the way to call it.
        let history = try ViewContextSaveTests.count(coordinator.storePath, "SELECT COUNT(*) FROM tributary_history")
        #expect(try await onOwnThread { try context.performAndWait { try context.save() } }.seq == 0)
        #expect(
            try ViewContextSaveTests.count(coordinator.storePath, "SELECT COUNT(*) FROM tributary_history") == history)
        let refusal = #expect(throws: ContextError.self) { try Self.saveOutsideItsQueue(context) }
        #expect(refusal?.code == .unsupported && "\(refusal!)".contains("perform"))
        await view.close()
    }

    @Test("a save in a block left without an answer is in doubt; the next one sends it first, applied once")
    func inDoubtInABlock() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let port = try #require(coordinator.process.listenEndpoint.split(separator: ":").last)
        let tap = try TCPTap(port: String(port))
        let connection = try CoordinatorConnection(endpoint: tap.endpoint)
        let store = CoordinatorStore(
            connection: connection, saveTimeout: .milliseconds(800), attemptTimeout: .milliseconds(200))
        let context = ObjectContext(model: Self.model, parent: store)
        try await onOwnThread {
            try context.performAndWait {
                try context.insert("User")["login"] = .string("dee")
                try context.save()
            }
        }

        try await tap.dropAnswers()
        let lost = try await onOwnThread {
            try context.performAndWait {
                // The object as the context holds it: a fetch would wait for its lost answer too.
                ViewContextSaveTests.registered("dee", in: context)?["name"] = .string("Dee")
                return Result { try context.save() }
            }
        }
        #expect(throws: SaveInDoubtError.self) { try lost.get() }
        #expect(try await context.perform { ($0.hasSaveInDoubt, $0.hasChanges) } == (true, false))
        try await waitUntil("the unanswered save to be committed") {
            try ViewContextSaveTests.users(coordinator.storePath)["dee"]?.name == "Dee"
        }

        try await tap.forwardAnswers()
        let receipt = try await onOwnThread {
            try context.performAndWait {
                // As the context holds it (a fetch would refresh its version): the save in doubt goes first, and
                // this edit is taken once its answer set the version.
                ViewContextSaveTests.registered("dee", in: context)?["name"] = .string("Dee Dee")
                return try context.save()
            }
        }
        let users = try ViewContextSaveTests.users(coordinator.storePath)
        #expect(users["dee"]?.name == "Dee Dee" && users["dee"]?.version == Int64(receipt.seq))
        #expect(
            try ViewContextSaveTests.count(coordinator.storePath, "SELECT COUNT(*) FROM tributary_history") == 3,
            "the insert, the unanswered save once, the later one")
        #expect(try await context.perform { $0.hasSaveInDoubt } == false)
        await connection.close()
    }

    /// A parent in front of a store in the process that holds each save until the test lets it through.
    final class HoldingParent: ChangeSetParent {
        let store: LocalRootParent
        let received: AsyncStream<Void>
        let blockedSaveLimit: Duration
        private let receivedContinuation: AsyncStream<Void>.Continuation
        private let held = Mutex<[CheckedContinuation<Void, Never>]>([])

        init(store: RootStore, blockedSaveLimit: Duration = .seconds(60)) {
            self.store = LocalRootParent(store: store)
            self.blockedSaveLimit = blockedSaveLimit
            (received, receivedContinuation) = AsyncStream.makeStream()
        }

        /// Lets the saves held so far through.
        func release() {
            let waiting = held.withLock { held in
                defer { held = [] }
                return held
            }
            for save in waiting { save.resume() }
        }

        func save(_ changes: Tributary_V1_ChangeSet) async throws -> SaveReceipt {
            await withCheckedContinuation { continuation in
                held.withLock { $0.append(continuation) }
                receivedContinuation.yield()
            }
            return try await store.save(changes)
        }

        func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply {
            try store.fetch(request)
        }
    }

    @Test("a save in a block waits for the save in flight, takes its answer first, and does not conflict with it")
    func waitsForTheSaveInFlight() async throws {
        let directory = try TemporaryDirectory()
        let root = try RootStore.open(path: directory.path("store.sqlite"), model: Self.model)
        let parent = HoldingParent(store: root)
        var arrivals = parent.received.makeAsyncIterator()
        let context = ObjectContext(model: Self.model, parent: parent)
        // The merge policy refuses a write of an object at an older version than the store's: had the second save
        // taken its changes before the first one's answer set the version, it would conflict.
        try await context.perform { try $0.insert("User")["login"] = .string("eve") }
        let inserting = Task { try await context.save() }
        _ = await arrivals.next()
        parent.release()
        let inserted = try await inserting.value

        try await context.perform { try ViewContextSaveTests.user("eve", in: $0)["name"] = .string("first") }
        let first = Task { try await context.save() }
        _ = await arrivals.next()
        let second = Task {
            try await onOwnThread {
                try context.performAndWait {
                    try ViewContextSaveTests.user("eve", in: context)["name"] = .string("second")
                    return try context.save()
                }
            }
        }
        try await waitUntil("the save in a block to wait for the one in flight") { context.saving.waiterCount == 1 }
        parent.release()
        let firstReceipt = try await first.value
        _ = await arrivals.next()
        parent.release()
        let secondReceipt = try await second.value
        #expect(inserted.seq < firstReceipt.seq && firstReceipt.seq < secondReceipt.seq)
        let stored = try root.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT name, _version FROM User WHERE login = 'eve'")
        }
        #expect(stored?["name"] == "second" && stored?["_version"] == Int64(secondReceipt.seq))
        #expect(
            try await context.perform { try ViewContextSaveTests.user("eve", in: $0).version } == secondReceipt.seq)
    }

    @Test("a save in a block gives the queue back after the parent's limit while the save in flight is held")
    func givesUpWaitingForTheSaveInFlight() async throws {
        let directory = try TemporaryDirectory()
        let root = try RootStore.open(path: directory.path("store.sqlite"), model: Self.model)
        let parent = HoldingParent(store: root, blockedSaveLimit: .milliseconds(200))
        var arrivals = parent.received.makeAsyncIterator()
        let context = ObjectContext(model: Self.model, parent: parent)
        try await context.perform { try $0.insert("User")["login"] = .string("eve") }
        let first = Task { try await context.save() }
        _ = await arrivals.next()
        let blocked = try await onOwnThread {
            try context.performAndWait {
                // Held: not in the store yet.
                try #require(ViewContextSaveTests.registered("eve", in: context))["name"] = .string("later")
                return Result { try context.save() }
            }
        }
        let timedOut = #expect(throws: ContextError.self) { try blocked.get() }
        #expect(timedOut?.code == .timedOut && "\(timedOut!)".contains("still pending"))
        #expect(context.saving.waiterCount == 0, "the waiter it left is gone")
        parent.release()
        let inserted = try await first.value
        let second = Task { try await context.save() }
        _ = await arrivals.next()
        parent.release()
        let renamed = try await second.value
        #expect(inserted.seq < renamed.seq)
        let stored = try root.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT name, _version FROM User WHERE login = 'eve'")
        }
        #expect(stored?["name"] == "later" && stored?["_version"] == Int64(renamed.seq))
    }

    @Test("a save in a block that gives up waiting for an in-process store is in doubt; sent again, applied once")
    func inDoubtAgainstALocalStore() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        let root = try RootStore.open(path: path, model: Self.model)
        let context = ObjectContext(
            model: Self.model, parent: LocalRootParent(store: root, blockedSaveLimit: .milliseconds(300)))
        // Another connection holds the store's write lock until told: the store's writer waits for it (its busy
        // timeout).
        let blocker = try DatabaseQueue(path: path)
        let (locked, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let holding = Task {
            try await onOwnThread {
                try blocker.inDatabase { db in
                    try db.execute(sql: "BEGIN IMMEDIATE")
                    locked.signal()
                    release.wait()
                    try db.execute(sql: "ROLLBACK")
                }
            }
        }
        try await onOwnThread { locked.wait() }
        let blocked = try await withTimeout("the save in a block to give up", .seconds(30)) {
            try await Self.insertAndSaveInABlock("ada", in: context)
        }
        #expect(throws: SaveInDoubtError.self) { try blocked.get() }
        #expect(try await context.perform { $0.hasSaveInDoubt })
        release.signal()
        try await holding.value
        // Sent again with its id while its first task may still be applying it: one commit either way.
        _ = try await context.save()
        #expect(try await context.perform { $0.hasSaveInDoubt } == false)
        let (users, commits) = try await root.pool.read { db in
            (
                try Int.fetchOne(db, sql: "SELECT count(*) FROM User WHERE login = 'ada'"),
                try Int.fetchOne(db, sql: "SELECT count(*) FROM tributary_history")
            )
        }
        #expect(users == 1 && commits == 1)
    }

    @Test("a save in a block of `await perform` runs on the context's queue, not a task's thread: allowed")
    func saveInsideAwaitedPerform() async throws {
        let directory = try TemporaryDirectory()
        let root = try RootStore.open(path: directory.path("store.sqlite"), model: Self.model)
        let context = ObjectContext(model: Self.model, parent: LocalRootParent(store: root))
        let receipt = try await context.perform { context in
            try context.insert("User")["login"] = .string("ann")
            return try context.save()
        }
        #expect(receipt.seq > 0)
        #expect(try await context.perform { $0.hasChanges } == false)
        let logins = try await root.pool.read { db in try String.fetchAll(db, sql: "SELECT login FROM User") }
        #expect(logins == ["ann"])
    }

    @Test("a child saves in a block into its parent context; the parent's save sends it")
    func childSavesInABlock() async throws {
        let directory = try TemporaryDirectory()
        let root = try RootStore.open(path: directory.path("store.sqlite"), model: Self.model)
        let parent = ObjectContext(model: Self.model, parent: LocalRootParent(store: root), name: "parent")
        let child = ObjectContext(model: Self.model, parent: parent, name: "child")
        let absorbed = try await onOwnThread {
            try child.performAndWait {
                try child.insert("User")["login"] = .string("kid")
                return try child.save()
            }
        }
        #expect(absorbed.seq == 0)
        #expect(try await parent.perform { $0.insertedObjects.count } == 1)
        let receipt = try await onOwnThread { try parent.performAndWait { try parent.save() } }
        #expect(receipt.seq > 0)
        let logins = try await root.pool.read { db in try String.fetchAll(db, sql: "SELECT login FROM User") }
        #expect(logins == ["kid"])
    }

    @Test("after a save in doubt, the next save sends it first and takes later edits at the version it committed")
    func editAfterSaveInDoubt() async throws {
        let directory = try TemporaryDirectory()
        let root = try RootStore.open(path: directory.path("store.sqlite"), model: Self.model)
        for inBlock in [false, true] {
            let login = inBlock ? "in-block" : "awaited"
            let parent = SaveInDoubtTests.LosingParent(store: root)
            let context = ObjectContext(model: Self.model, parent: parent, name: login)
            func save() async throws -> SaveReceipt {
                if inBlock { return try await onOwnThread { try context.performAndWait { try context.save() } } }
                return try await context.save()
            }
            // Edits of the object as the context holds it, never refetched: its version is what the saves set.
            func rename(_ name: String) async throws {
                try await context.perform { context in
                    ViewContextSaveTests.registered(login, in: context)?["name"] = .string(name)
                }
            }
            try await context.perform { try $0.insert("User")["login"] = .string(login) }
            _ = try await save()
            try await rename("lost once")
            parent.loseNext()
            await #expect(throws: SaveInDoubtError.self) { _ = try await save() }
            try await rename("later")
            let receipt = try await save()
            let stored = try root.pool.read { db in
                try Row.fetchOne(db, sql: "SELECT name, _version FROM User WHERE login = ?", arguments: [login])
            }
            #expect(stored?["name"] == "later" && stored?["_version"] == Int64(receipt.seq), "\(login)")
            #expect(
                try await context.perform { ViewContextSaveTests.registered(login, in: $0)?.version } == receipt.seq)
        }
    }

    @Test("a save in a block is refused from a Swift concurrency task and in a job's context, its changes kept")
    func refusedWhereItWouldBlockATask() async throws {
        let directory = try TemporaryDirectory()
        let root = try RootStore.open(path: directory.path("store.sqlite"), model: Self.model)
        let context = ObjectContext(model: Self.model, parent: LocalRootParent(store: root))
        let fromTask = #expect(throws: ContextError.self) {
            try context.performAndWait {
                try context.insert("User")["login"] = .string("ada")
                try context.save()
            }
        }
        #expect(fromTask?.code == .unsupported && "\(fromTask!)".contains("await"))
        #expect(try await context.perform { $0.insertedObjects.count } == 1)

        let connection = try CoordinatorConnection(endpoint: "tcp://127.0.0.1:9")
        let job = JobRun(assignment: .with { $0.jobID = 7 }, model: Self.model, connection: connection)
        let jobContext = job.makeContext()
        let inJob = try await Self.insertAndSaveInABlock("bob", in: jobContext)
        let refusal = #expect(throws: ContextError.self) { try inJob.get() }
        #expect(refusal?.code == .unsupported && "\(refusal!)".contains("try await context.save()"))
        #expect(try await jobContext.perform { $0.insertedObjects.count } == 1, "the changes stay pending")

        // Refused before it waits: with the job's save in flight (no coordinator answers), at once.
        let inFlight = Task { try await jobContext.save() }
        try await waitUntil("the job's save to be in flight") {
            try await jobContext.perform { !$0.hasChanges }
        }
        let behind = try await Self.insertAndSaveInABlock("cy", in: jobContext)
        #expect(jobContext.saving.isHeld, "refused while the save in flight holds the gate")
        let refusedAtOnce = #expect(throws: ContextError.self) { try behind.get() }
        #expect(refusedAtOnce?.code == .unsupported)
        await connection.close()
        _ = try? await inFlight.value
        #expect(try await jobContext.perform { $0.insertedObjects.count } == 2, "both inserts pending again")
    }

    @Test("a child's save in a block, behind its save that waits for the parent's queue, is refused as a wait cycle")
    func childWaitingForItsWaitingParent() async throws {
        let directory = try TemporaryDirectory()
        let root = try RootStore.open(path: directory.path("store.sqlite"), model: Self.model)
        let parent = ObjectContext(model: Self.model, parent: LocalRootParent(store: root), name: "parent")
        let child = ObjectContext(model: Self.model, parent: parent, name: "child")
        try await child.perform { try $0.insert("User")["login"] = .string("first") }
        let outcome = try await onOwnThread {
            try parent.performAndWait {
                // The child's save takes its changes, then waits for this queue to absorb them.
                let inFlight = Task { try await child.save() }
                let deadline = ContinuousClock.now + .seconds(30)
                while try child.performAndWait({ child.hasChanges }) {
                    guard ContinuousClock.now < deadline else { throw TimedOut(what: "the child's save") }
                    Thread.sleep(forTimeInterval: 0.005)
                }
                let blocked = try child.performAndWait {
                    try child.insert("User")["login"] = .string("second")
                    return Result { try child.save() }
                }
                return (blocked, inFlight)
            }
        }
        let cycle = #expect(throws: ContextError.self) { try outcome.0.get() }
        #expect(cycle?.code == .waitCycle)
        _ = try await outcome.1.value
        #expect(try await parent.perform { $0.insertedObjects.count } == 1)
        #expect(try await child.perform { $0.insertedObjects.count } == 1, "the refused save's insert stays pending")
    }
}
