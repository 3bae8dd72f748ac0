import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo

/// Child contexts whose saves go into a parent context in memory, and on to the root only when the parent saves.
@Suite("Nested contexts: child → parent in memory → root")
struct NestedContextTests {
    let directory: TemporaryDirectory
    let store: RootStore
    let parent: ObjectContext
    let child: ObjectContext

    init() throws {
        directory = try TemporaryDirectory()
        let model = try Model.decode(Data(DemoData.modelJSON.utf8))
        store = try RootStore.open(path: directory.path("store.sqlite"), model: model)
        parent = ObjectContext(model: model, parent: LocalRootParent(store: store), name: "parent")
        child = ObjectContext(model: model, parent: parent, name: "child")
    }

    func storedUsers() async throws -> [String: String?] {
        let queue = try DatabaseQueue(path: directory.path("store.sqlite"))
        return try await queue.read { db in
            var users: [String: String?] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT login, name FROM User") { users[row["login"]] = row["name"] }
            return users
        }
    }

    @Test("a child's save becomes the parent's unsaved changes; the store is untouched until the parent saves")
    func childParentRoot() async throws {
        let ada = try await child.perform { context in
            let ada = try context.findOrCreate("User", matching: ["login": .string("ada")])
            ada["name"] = .string("Ada")
            _ = try context.findOrCreate("User", matching: ["login": .string("grace")])
            return ada.objectID
        }
        #expect(try await child.save().seq == 0, "a parent context commits nothing")
        #expect(try await child.perform { $0.hasChanges } == false)
        let pending = try await parent.perform { context in
            (context.hasChanges, context.insertedObjects.compactMap { $0["login"] })
        }
        #expect(pending.0 && pending.1 == [.string("ada"), .string("grace")])
        #expect(try await store.feed.lastSequenceNumber() == 0)
        #expect(try await storedUsers().isEmpty)

        // A second child save: an update of an object the parent holds as an insert, and a delete.
        try await child.perform { context in
            try context.object(with: ada)["name"] = .string("Ada Lovelace")
            let grace = try context.findOrCreate("User", matching: ["login": .string("grace")])
            context.delete(grace)
        }
        try await child.save()
        let found = try await parent.perform { context in
            try context.findOrCreate("User", matching: ["login": .string("ada")]).objectID
        }
        #expect(found == ada, "the parent finds the child's insert by its uniqueness")
        #expect(try await storedUsers().isEmpty)

        #expect(try await parent.save().seq == 1)
        #expect(try await storedUsers() == ["ada": "Ada Lovelace"])
        #expect(try await parent.perform { $0.hasChanges } == false)
    }

    @Test("a child save that does not fit the model is refused whole, and its changes stay in the child")
    func refusedChildSave() async throws {
        let other = ObjectContext(
            model: try Model.decode(
                Data(#"{"entities": [{"name": "Team", "attributes": [{"name": "name", "type": "string"}]}]}"#.utf8)),
            parent: parent, name: "other")
        try await other.perform { context in
            let team = try context.insert("Team")
            team["name"] = .string("core")
        }
        await #expect(throws: ContextError.self) { try await other.save() }
        #expect(try await other.perform { $0.hasChanges })
        #expect(try await parent.perform { $0.hasChanges } == false)
    }

    @Test("rollback forgets inserts, brings deletes back and returns changed objects to their saved values")
    func rollback() async throws {
        try await parent.perform { context in
            let ada = try context.findOrCreate("User", matching: ["login": .string("ada")])
            ada["name"] = .string("Ada")
            _ = try context.findOrCreate("User", matching: ["login": .string("grace")])
        }
        try await parent.save()
        let outcome = try await parent.perform { context in
            let ada = try context.findOrCreate("User", matching: ["login": .string("ada")])
            let grace = try context.findOrCreate("User", matching: ["login": .string("grace")])
            ada["name"] = .string("Changed")
            context.delete(grace)
            _ = try context.findOrCreate("User", matching: ["login": .string("linus")])
            #expect(context.hasChanges)
            context.rollback()
            let logins = Set(context.registeredObjects.compactMap { $0["login"] })
            let graceAgain = try context.findOrCreate("User", matching: ["login": .string("grace")])
            return (
                context.hasChanges, ada["name"], logins, graceAgain === grace && !grace.isDeleted,
                graceAgain.isInserted
            )
        }
        #expect(outcome.0 == false, "nothing left to save")
        #expect(outcome.1 == .string("Ada"), "the saved value is back")
        #expect(outcome.2 == [.string("ada"), .string("grace")], "the insert is gone, the delete undone")
        #expect(outcome.3 && !outcome.4, "find-or-create finds the restored object")
        #expect(try await parent.save().seq == 0)
    }
}
