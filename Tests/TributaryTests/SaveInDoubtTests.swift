import Foundation
import Synchronization
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryProtocol

/// How a context settles a save in doubt, against a real root store in the process: a parent in front of it loses
/// a save before it reaches the store (what a network can do, and the coordinator tests cannot stage).
@Suite("A context's save in doubt")
struct SaveInDoubtTests {
    /// A parent in front of the store that can lose the next save: nothing is applied, and the sender is told it
    /// is in doubt.
    final class LosingParent: ChangeSetParent {
        let store: LocalRootParent
        private let lose = Mutex(false)

        init(store: RootStore) { self.store = LocalRootParent(store: store) }

        func loseNext() { lose.withLock { $0 = true } }

        func save(_ changes: Tributary_V1_ChangeSet) async throws -> SaveReceipt {
            try await save(changes, id: UUID())
        }

        func save(_ changes: Tributary_V1_ChangeSet, id: UUID) async throws -> SaveReceipt {
            let lost = lose.withLock { lose in
                defer { lose = false }
                return lose
            }
            if lost { throw SaveInDoubtError(saveID: id, reason: "lost on the way") }
            return try await store.save(changes)
        }

        func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply {
            try store.fetch(request)
        }
    }

    let directory: TemporaryDirectory
    let store: RootStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try RootStore.open(path: directory.path("store.sqlite"), model: ViewContextTests.model)
    }

    static func user(_ login: String, in context: ObjectContext) throws -> ManagedObject {
        try #require(
            try context.fetch(FetchRequest(entity: "User", predicate: try FetchPredicate(format: "login == %@", login)))
                .first)
    }

    @Test("a resend that commits after another writer's commit leaves the context with what it committed")
    func resendAfterAnotherCommit() async throws {
        let parent = LosingParent(store: store)
        let seeding = ObjectContext(model: ViewContextTests.model, parent: parent, name: "seeding")
        let id = try await seeding.perform { context in
            let dee = try context.insert("User")
            dee["login"] = .string("dee")
            return dee.objectID
        }
        try await seeding.save()
        // A context sets the name without reading the object (a fault): a write without a version, so no conflict
        // settles it at the root.
        let a = ObjectContext(model: ViewContextTests.model, parent: parent, name: "a")
        try await a.perform { context in try context.object(with: id).setValue(.string("from a"), for: "name") }
        parent.loseNext()
        await #expect(throws: SaveInDoubtError.self) { try await a.save() }

        // Another writer commits; the context reads its commit over the save in doubt.
        let b = ObjectContext(model: ViewContextTests.model, parent: LocalRootParent(store: store), name: "b")
        try await b.perform { try Self.user("dee", in: $0)["name"] = .string("from b") }
        let other = try await b.save()
        #expect(try await a.perform { try Self.user("dee", in: $0)["name"] } == .string("from b"))

        let resent = try await a.save()
        #expect(resent.seq > other.seq)
        let stored = try await store.pool.read { db in try String.fetchOne(db, sql: "SELECT name FROM User") }
        #expect(stored == "from a")
        let held = try await a.perform { context in
            let dee = try context.object(with: id)
            return (dee["name"], dee.version)
        }
        #expect(held.0 == .string("from a") && held.1 == resent.seq)
    }
}
