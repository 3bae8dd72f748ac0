import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryProtocol

/// Relationships are stored as the destinations' integer row keys: ids turn into keys on the way in (also for
/// destinations written later in the same change set) and back on the way out.
@Suite("Row keys: relationships by integer keys")
struct RowKeyTests {
    static let modelJSON = """
        {"entities": [
          {"name": "User", "attributes": [{"name": "login", "type": "string"}],
           "relationships": [{"name": "mentor", "destination": "User", "optional": true},
                             {"name": "friends", "destination": "User", "toMany": true}],
           "uniqueness": [["login"]]}]}
        """

    /// login → (mentor's login, friends' logins), read from the file with a separate connection.
    static func users(_ store: TemporaryStore) async throws -> [String: (String?, [String])] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: store.directory.path("store.sqlite"), configuration: configuration)
        return try await queue.read { db in
            var users: [String: (String?, [String])] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT u.login, m.login FROM User u LEFT JOIN User m ON m._rowid = u.mentor")
            {
                users[row[0]] = (row[1], [])
            }
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT u.login, f.login FROM User_friends j JOIN User u ON u._rowid = j.source
                    JOIN User f ON f._rowid = j.destination ORDER BY f.login
                    """)
            {
                users[row[0]]?.1.append(row[1])
            }
            return users
        }
    }

    @Test("a reference to an object found by its key later in the same batch points to the stored object")
    func referenceFollowsLaterRemap() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        let first = store.makeContext("first")
        try await first.perform { context in
            try context.insert("User").setValue(.string("bea"), for: "login")
        }
        try await first.save()
        // A new "bea" in another context, inserted after the user that points to it: the store merges it into the
        // stored one when it reaches its row, after the reference was written.
        let second = store.makeContext("second")
        try await second.perform { context in
            let ada = try context.insert("User")
            try ada.setValue(.string("ada"), for: "login")
            let bea = try context.insert("User")
            try bea.setValue(.string("bea"), for: "login")
            try ada.setDestination(bea, for: "mentor")
            try ada.setDestinations([bea], for: "friends")
        }
        try await second.save()
        let users = try await Self.users(store)
        #expect(users.count == 2)
        #expect(users["ada"]?.0 == "bea")
        #expect(users["ada"]?.1 == ["bea"])
    }

    @Test("references to objects inserted later in the same batch, and to the object itself, are kept")
    func referencesWithinOneBatch() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        let context = store.makeContext()
        try await context.perform { context in
            let ada = try context.insert("User")
            try ada.setValue(.string("ada"), for: "login")
            let bea = try context.insert("User")
            try bea.setValue(.string("bea"), for: "login")
            try ada.setDestination(bea, for: "mentor")
            try bea.setDestination(bea, for: "mentor")
            try ada.setDestinations([ada, bea], for: "friends")
            try bea.setDestinations([ada], for: "friends")
        }
        try await context.save()
        let users = try await Self.users(store)
        #expect(users["ada"]?.0 == "bea" && users["bea"]?.0 == "bea")
        #expect(users["ada"]?.1 == ["ada", "bea"] && users["bea"]?.1 == ["ada"])
        // Read back through a fetch: ids again, not row keys.
        let reader = store.makeContext("reader")
        let (mentor, friends, beaID) = try await reader.perform { context in
            let ada = try context.fetch(FetchRequest(entity: "User", predicate: Key("login") == "ada"))[0]
            let bea = try context.fetch(FetchRequest(entity: "User", predicate: Key("login") == "bea"))[0]
            return (try ada.destination("mentor"), try ada.destinations("friends"), bea.objectID)
        }
        #expect(mentor == beaID)
        #expect(friends.count == 2 && friends.contains(beaID))
        // A predicate on a to-one relationship compares ids.
        let mentored = try await reader.perform { context in
            try context.fetch(FetchRequest(entity: "User", predicate: Key("mentor") == beaID)).count
        }
        #expect(mentored == 2)
    }

    @Test("a reference to an object the store does not have is refused, naming the relationship and the object")
    func danglingReferenceRefused() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        let missing = UUID()
        var batch = Tributary_V1_EntityBatch.inserting("User", "login", "ada")
        batch.columns.append(
            .with {
                $0.name = "mentor"
                $0.fixed16 = missing.bytes
            })
        let changeSet = Tributary_V1_ChangeSet.with { $0.batches = [batch] }
        let error = await #expect(throws: StoreError.self) {
            _ = try await LocalRootParent(store: store.store).save(changeSet)
        }
        #expect(error?.code == .constraint)
        #expect(error?.message.contains("'User.mentor'") == true, "\(String(describing: error))")
        #expect(error?.message.contains(missing.uuidString.lowercased()) == true, "\(String(describing: error))")
        #expect(error?.message.contains("does not exist") == true)
        #expect(try await Self.users(store).isEmpty)
    }
}
