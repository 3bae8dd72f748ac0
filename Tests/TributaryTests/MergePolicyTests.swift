import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore

/// Optimistic locking at the root: two contexts change the same object; the second save meets the first and its
/// context's merge policy decides, per property, who wins.
@Suite("Merge policies on conflicting saves")
struct MergePolicyTests {
    static let modelJSON = """
        {"entities": [{"name": "PullRequest",
          "attributes": [{"name": "number", "type": "int"}, {"name": "title", "type": "string"},
                         {"name": "state", "type": "string"}, {"name": "additions", "type": "int"}],
          "uniqueness": [["number"]]}]}
        """

    let local: TemporaryStore
    var store: RootStore { local.store }
    var model: Model { local.model }

    init() throws {
        local = try TemporaryStore(modelJSON: Self.modelJSON)
    }

    func makeContext(_ name: String = "context", policy: MergePolicy = .error) -> ObjectContext {
        local.makeContext(name, policy: policy)
    }

    /// Saves pull request 1 as {title "t", state "open", additions 1}; returns its id.
    func seed() async throws -> ObjectID {
        let context = makeContext("seed")
        let id = try await context.perform { context in
            let pr = try context.insert("PullRequest")
            try pr.setValue(.int(1), for: "number")
            try pr.setValue(.string("t"), for: "title")
            try pr.setValue(.string("open"), for: "state")
            try pr.setValue(.int(1), for: "additions")
            return pr.objectID
        }
        try await context.save()
        return id
    }

    /// Reads the stored object into `context`, as a fetch does, with its version.
    func load(_ id: ObjectID, into context: ObjectContext) async throws {
        let entity = try #require(model.entity(named: id.entity))
        let batch = try await store.pool.read { db in try ObjectRows.read(entity, ids: [id.uuid], in: db) }
        try await context.perform { context in try context.merge(batch, registeringNew: true) }
    }

    func stored(_ id: ObjectID) async throws -> (title: String, state: String, additions: Int64, version: UInt64) {
        try await store.pool.read { db in
            let row = try #require(
                try Row.fetchOne(
                    db, sql: "SELECT title, state, additions, _version FROM PullRequest WHERE id = ?",
                    arguments: [id.uuid.bytes]))
            return (row[0], row[1], row[2], UInt64(row[3] as Int64))
        }
    }

    /// Context A saves {title "A", state "closed"}; then context B, which read the object before A's save, saves
    /// {title "B", additions 5} under `policy`.
    func conflictingSaves(policy: MergePolicy) async throws -> (id: ObjectID, b: ObjectContext, error: (any Error)?) {
        let id = try await seed()
        let a = makeContext("a")
        let b = makeContext("b", policy: policy)
        try await load(id, into: a)
        try await load(id, into: b)
        try await a.perform { a in
            let pr = try a.object(with: id)
            try pr.setValue(.string("A"), for: "title")
            try pr.setValue(.string("closed"), for: "state")
        }
        try await a.save()
        try await b.perform { b in
            let pr = try b.object(with: id)
            try pr.setValue(.string("B"), for: "title")
            try pr.setValue(.int(5), for: "additions")
        }
        do {
            try await b.save()
            return (id, b, nil)
        } catch {
            return (id, b, error)
        }
    }

    @Test("error: the whole save is refused with the conflict, per property stored vs yours; nothing applied")
    func errorPolicy() async throws {
        let (id, b, error) = try await conflictingSaves(policy: .error)
        let conflict = try #require((error as? MergeConflictError)?.conflicts.first)
        #expect(conflict.objectID == id)
        #expect(conflict.storedVersion != conflict.readVersion)
        let properties = Dictionary(uniqueKeysWithValues: conflict.properties.map { ($0.name, $0) })
        #expect(properties["title"]?.stored == .string("A"))
        #expect(properties["title"]?.yours == .string("B"))
        #expect(properties["additions"]?.stored == .int(1))
        #expect(properties["additions"]?.yours == .int(5))
        let row = try await stored(id)
        #expect((row.title, row.state, row.additions) == ("A", "closed", 1))
        // The refused changes stay pending in B, as in Core Data.
        #expect(try await b.perform { $0.hasChanges })
    }

    @Test("objectTrump: B's changed properties win, A's other change stays")
    func objectTrump() async throws {
        let (id, b, error) = try await conflictingSaves(policy: .objectTrump)
        #expect(error == nil)
        let row = try await stored(id)
        #expect((row.title, row.state, row.additions) == ("B", "closed", 5))
        try await expectContext(b, holds: id, title: "B", state: "closed", additions: 5, version: row.version)
    }

    @Test("storeTrump: properties A changed keep A's values, B's other changes apply")
    func storeTrump() async throws {
        let (id, b, error) = try await conflictingSaves(policy: .storeTrump)
        #expect(error == nil)
        let row = try await stored(id)
        #expect((row.title, row.state, row.additions) == ("A", "closed", 5))
        try await expectContext(b, holds: id, title: "A", state: "closed", additions: 5, version: row.version)
    }

    @Test("overwrite: B's whole object replaces the stored one")
    func overwrite() async throws {
        let (id, b, error) = try await conflictingSaves(policy: .overwrite)
        #expect(error == nil)
        let row = try await stored(id)
        #expect((row.title, row.state, row.additions) == ("B", "open", 5))
        try await expectContext(b, holds: id, title: "B", state: "open", additions: 5, version: row.version)
    }

    @Test("rollback: the stored object stays as A saved it, and B takes it")
    func rollback() async throws {
        let (id, b, error) = try await conflictingSaves(policy: .rollback)
        #expect(error == nil)
        let row = try await stored(id)
        #expect((row.title, row.state, row.additions) == ("A", "closed", 1))
        try await expectContext(b, holds: id, title: "A", state: "closed", additions: 1, version: row.version)
    }

    /// After a resolved save, B holds the stored object at the stored version, so its next save does not conflict.
    func expectContext(
        _ context: ObjectContext, holds id: ObjectID, title: String, state: String, additions: Int64,
        version: UInt64
    ) async throws {
        let held = try await context.perform { context in
            let pr = try context.object(with: id)
            return (pr["title"], pr["state"], pr["additions"], pr.version, context.hasChanges)
        }
        #expect(held.0 == .string(title))
        #expect(held.1 == .string(state))
        #expect(held.2 == .int(additions))
        #expect(held.3 == version)
        #expect(held.4 == false)
        context.mergePolicy = .error
        try await context.perform { try $0.object(with: id).setValue(.int(99), for: "additions") }
        try await context.save()
        #expect(try await stored(id).additions == 99)
    }

    @Test("a delete of an object changed since it was read: error refuses it, rollback keeps the object")
    func deleteConflicts() async throws {
        for policy in [MergePolicy.error, .rollback, .objectTrump] {
            let id = try await seed()
            let a = makeContext("a")
            let b = makeContext("b", policy: policy)
            try await load(id, into: a)
            try await load(id, into: b)
            try await a.perform { try $0.object(with: id).setValue(.string("A"), for: "title") }
            try await a.save()
            try await b.perform { b in b.delete(try b.object(with: id)) }
            let error: (any Error)?
            do {
                try await b.save()
                error = nil
            } catch let caught {
                error = caught
            }
            let exists = try await store.pool.read { db in
                try Bool.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest WHERE id = ?", arguments: [id.uuid.bytes])
                    ?? false
            }
            switch policy {
            case .error:
                #expect(error is MergeConflictError)
                #expect(exists)
            case .rollback:
                #expect(error == nil)
                #expect(exists)
            default:
                #expect(error == nil)
                #expect(!exists)
            }
            try await store.pool.write { db in try db.execute(sql: "DELETE FROM PullRequest") }
        }
    }

    @Test("merging a didSave brings the object's version up to date: the next save does not conflict")
    func mergedSavesRefreshVersions() async throws {
        let id = try await seed()
        let a = makeContext("a")
        let b = makeContext("b")
        try await load(id, into: a)
        try await load(id, into: b)
        try await a.perform { try $0.object(with: id).setValue(.string("A"), for: "title") }
        let seq = try await a.save().seq
        let history = try await store.feed.history(FeedStore.HistoryQuery(after: seq - 1))
        let save = DidSave(parts: history.parts)
        try await b.perform { b in try b.mergeChanges(from: save) }
        try await b.perform { try $0.object(with: id).setValue(.int(7), for: "additions") }
        try await b.save()
        let row = try await stored(id)
        #expect((row.title, row.additions) == ("A", 7))
    }

    @Test("saves without versions (objects never read) are written blindly, as before")
    func blindWrites() async throws {
        let id = try await seed()
        let a = makeContext("a")
        try await a.perform { try $0.object(with: id).setValue(.string("blind"), for: "title") }
        try await a.save()
        #expect(try await stored(id).title == "blind")
    }
}
