import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryProtocol

/// The writer remembers objects it found or created by their uniqueness keys across change sets (``KnownKeys``);
/// each test changes what a remembered key says, then finds the key again, and checks the store.
@Suite("Known keys: what the writer remembers by key is forgotten when it may have changed")
struct KnownKeysTests {
    static let modelJSON = """
        {"entities": [
          {"name": "User", "attributes": [{"name": "login", "type": "string"},
                                          {"name": "name", "type": "string", "optional": true}],
           "uniqueness": [["login"]]},
          {"name": "Post", "attributes": [{"name": "title", "type": "string"}],
           "relationships": [{"name": "author", "destination": "User", "optional": true}]}]}
        """

    /// Users with an optional login and a second uniqueness key.
    static let twoKeysModelJSON = """
        {"entities": [
          {"name": "User", "attributes": [{"name": "login", "type": "string", "optional": true},
                                          {"name": "email", "type": "string", "optional": true}],
           "uniqueness": [["login"], ["email"]]},
          {"name": "Post", "attributes": [{"name": "title", "type": "string"}],
           "relationships": [{"name": "author", "destination": "User", "optional": true}]}]}
        """

    /// The users' logins ("null" for none), and each post's title → its author's login, read with a separate connection.
    static func contents(_ store: TemporaryStore) async throws -> (users: Set<String>, posts: [String: String]) {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: store.directory.path("store.sqlite"), configuration: configuration)
        return try await queue.read { db in
            let users = try Set(String.fetchAll(db, sql: "SELECT coalesce(login, 'null') FROM User"))
            var posts: [String: String] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT p.title, coalesce(u.login, 'null') FROM Post p JOIN User u ON u._rowid = p.author")
            {
                posts[row[0]] = row[1]
            }
            return (users, posts)
        }
    }

    /// Finds or creates users by login (a key-only batch: the one whose keys the writer remembers), and a post by
    /// the first of them when `post` names one.
    func findOrCreate(_ logins: [String], in store: TemporaryStore, post: String? = nil) async throws {
        let context = store.makeContext()
        try await context.perform { context in
            var users: [String: ManagedObject] = [:]
            for login in logins {
                users[login] = try context.findOrCreate("User", matching: ["login": .string(login)])
            }
            if let post {
                let object = try context.insert("Post")
                try object.setValue(.string(post), for: "title")
                try object.setDestination(users[logins[0]], for: "author")
            }
        }
        try await context.save()
    }

    func userID(_ login: String, in store: TemporaryStore) async throws -> ObjectID {
        let context = store.makeContext()
        return try await context.perform { context in
            let found = try context.fetch(
                FetchRequest(entity: "User", predicate: FetchPredicate(format: "login == %@", login)))
            return try #require(found.first).objectID
        }
    }

    @Test("a user deleted after its key was found is created again, not referenced")
    func deleted() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        try await findOrCreate(["ada"], in: store)
        let id = try await userID("ada", in: store)
        let context = store.makeContext()
        try await context.perform { context in context.delete(try context.object(with: id)) }
        try await context.save()
        try await findOrCreate(["ada"], in: store, post: "hello")
        let (users, posts) = try await Self.contents(store)
        #expect(users == ["ada"])
        #expect(posts == ["hello": "ada"])
        #expect(try await userID("ada", in: store) != id)
    }

    @Test("a user found and deleted in the same change set is created again by the next, not referenced")
    func foundAndDeletedTogether() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        try await findOrCreate(["ada"], in: store)
        let ada = try await userID("ada", in: store).uuid
        let both = Tributary_V1_ChangeSet.with {
            $0.batches = [
                .inserting("User", "login", "ada"),
                .with {
                    $0.entity = "User"
                    $0.operation = .delete
                    $0.ids = ada.bytes
                },
            ]
        }
        _ = try await store.store.saves.applySave(SaveRequest(changes: both), from: "test")
        try await findOrCreate(["ada"], in: store, post: "hello")
        let (users, posts) = try await Self.contents(store)
        #expect(users == ["ada"])
        #expect(posts == ["hello": "ada"])
    }

    @Test("a user whose login changed after it was found is not found by the old login")
    func keyChanged() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        try await findOrCreate(["ada"], in: store)
        let id = try await userID("ada", in: store)
        let context = store.makeContext()
        try await context.perform { context in try context.object(with: id).setValue(.string("eve"), for: "login") }
        try await context.save()
        try await findOrCreate(["ada"], in: store, post: "hello")
        let (users, posts) = try await Self.contents(store)
        #expect(users == ["ada", "eve"])
        #expect(posts == ["hello": "ada"])
    }

    @Test("in one group commit, a login an insert naming its user's id rewrote is not found by the old login")
    func keyRewrittenByID() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        try await findOrCreate(["ada"], in: store)
        let ada = try await userID("ada", in: store).uuid
        // A key-only insert naming ada's id with another login: the store upserts by id, so ada's row becomes eve.
        let rename = Tributary_V1_ChangeSet.with { $0.batches = [.inserting("User", "login", "eve", id: ada)] }
        // In the same group, a new "ada" and a post by her.
        let newcomer = UUID()
        let post = Tributary_V1_ChangeSet.with {
            $0.batches = [
                .inserting("User", "login", "ada", id: newcomer),
                .inserting("Post", ids: [UUID()], [.strings("title", ["hello"]), .references("author", [newcomer])]),
            ]
        }
        let results = try await store.store.saves.applySaves([
            (SaveRequest(changes: rename), "test"), (SaveRequest(changes: post), "test"),
        ])
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        let (users, posts) = try await Self.contents(store)
        #expect(users == ["ada", "eve"])
        #expect(posts == ["hello": "ada"])
    }

    @Test("logins that differ only in Unicode normalization are two users, as the store's uniqueness says")
    func keysCompareAsTheStoreDoes() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        let composed = "Jos\u{E9}"
        let decomposed = "Jose\u{301}"
        #expect(composed == decomposed)  // Swift's String equality; SQLite compares bytes.
        try await findOrCreate([composed], in: store)
        try await findOrCreate([decomposed], in: store, post: "hello")
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: store.directory.path("store.sqlite"), configuration: configuration)
        let (users, author) = try await queue.read { db in
            (
                try Set(String.fetchAll(db, sql: "SELECT hex(login) FROM User")),
                try String.fetchOne(
                    db, sql: "SELECT hex(u.login) FROM Post p JOIN User u ON u._rowid = p.author")
            )
        }
        let hex = { (text: String) in text.utf8.map { String(format: "%02X", $0) }.joined() }
        #expect(users == [hex(composed), hex(decomposed)])
        #expect(author == hex(decomposed))
    }

    @Test("a user created by a save that was refused and rolled back is created again by the next save")
    func rolledBack() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        let refused = store.makeContext()
        try await refused.perform { context in
            _ = try context.findOrCreate("User", matching: ["login": .string("zed")])
            let post = try context.insert("Post")
            try post.setValue(.string("refused"), for: "title")
            // An author the store does not have: the save is refused whole.
            try post.setDestination(context.object(with: ObjectID(entity: "User", uuid: UUID())), for: "author")
        }
        await #expect(throws: (any Error).self) { try await refused.save() }
        try await findOrCreate(["zed"], in: store, post: "hello")
        let (users, posts) = try await Self.contents(store)
        #expect(users == ["zed"])
        #expect(posts == ["hello": "zed"])
    }

    @Test("keys found in one save are found again by the next, and the references they make are right")
    func remembered() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        try await findOrCreate(["ada", "bea"], in: store)
        try await findOrCreate(["bea", "ada", "cid"], in: store, post: "one")
        try await findOrCreate(["cid"], in: store, post: "two")
        let (users, posts) = try await Self.contents(store)
        #expect(users == ["ada", "bea", "cid"])
        #expect(posts == ["one": "bea", "two": "cid"])
    }

    @Test("a login cleared by a key-only insert naming its user's id is not found again")
    func keyClearedByID() async throws {
        let store = try TemporaryStore(modelJSON: Self.twoKeysModelJSON)
        try await findOrCreate(["ada"], in: store)
        let ada = try await userID("ada", in: store).uuid
        // The store upserts by id: ada's row keeps its id and loses its login.
        let clear = Tributary_V1_ChangeSet.with {
            $0.batches = [.inserting("User", ids: [ada], [.strings("login", [nil])])]
        }
        _ = try await store.store.saves.applySave(SaveRequest(changes: clear), from: "test")
        try await findOrCreate(["ada"], in: store, post: "hello")
        let (users, posts) = try await Self.contents(store)
        #expect(users == ["ada", "null"])
        #expect(posts == ["hello": "ada"])
    }

    @Test("a login rewritten by an insert covering two uniqueness keys is not found by the old login")
    func keyRewrittenWithTwoConstraints() async throws {
        let store = try TemporaryStore(modelJSON: Self.twoKeysModelJSON)
        try await findOrCreate(["ada"], in: store)
        let ada = try await userID("ada", in: store).uuid
        let rename = Tributary_V1_ChangeSet.with {
            $0.batches = [
                .inserting("User", ids: [ada], [.strings("login", ["eve"]), .strings("email", ["eve@example.com"])])
            ]
        }
        _ = try await store.store.saves.applySave(SaveRequest(changes: rename), from: "test")
        try await findOrCreate(["ada"], in: store, post: "hello")
        let (users, posts) = try await Self.contents(store)
        #expect(users == ["ada", "eve"])
        #expect(posts == ["hello": "ada"])
    }

    /// Logins and emails of the users; the post's author's login/email.
    static func usersAndEmails(_ store: TemporaryStore) async throws -> (users: Set<String>, author: String?) {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: store.directory.path("store.sqlite"), configuration: configuration)
        return try await queue.read { db in
            (
                try Set(
                    String.fetchAll(
                        db, sql: "SELECT coalesce(login, 'null') || '/' || coalesce(email, 'null') FROM User")),
                try String.fetchOne(
                    db,
                    sql: """
                        SELECT coalesce(u.login, 'null') || '/' || coalesce(u.email, 'null')
                        FROM Post p JOIN User u ON u._rowid = p.author
                        """)
            )
        }
    }

    @Test("a login is not found as an email of the same value (keys of two constraints share a table)")
    func keysOfTwoConstraintsCollide() async throws {
        let store = try TemporaryStore(modelJSON: Self.twoKeysModelJSON)
        let first = store.makeContext()
        try await first.perform { context in _ = try context.findOrCreate("User", matching: ["login": .string("x")]) }
        try await first.save()
        // A new user known by email only (a key-only batch of the email constraint), and a post by her.
        let second = store.makeContext()
        try await second.perform { context in
            let user = try context.insert("User")
            try user.setValue(.string("x"), for: "email")
            let post = try context.insert("Post")
            try post.setValue(.string("hello"), for: "title")
            try post.setDestination(user, for: "author")
        }
        try await second.save()
        let (users, author) = try await Self.usersAndEmails(store)
        #expect(users == ["x/null", "null/x"])
        #expect(author == "null/x")
    }

    @Test("an insert setting a second constraint's attribute of an object found by its first is written")
    func secondConstraintValueOfFoundObject() async throws {
        let store = try TemporaryStore(modelJSON: Self.twoKeysModelJSON)
        for email in ["a@x", "b@x"] {
            let context = store.makeContext()
            try await context.perform { context in
                let user = try context.findOrCreate("User", matching: ["login": .string("ada")])
                try user.setValue(.string(email), for: "email")
            }
            try await context.save()
        }
        #expect(try await Self.usersAndEmails(store).users == ["ada/b@x"])
    }

    @Test("in one change set, a login a fuller insert rewrote is not found by a later key-only batch")
    func keyRewrittenWithinChangeSet() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        try await findOrCreate(["ada"], in: store)
        let ada = try await userID("ada", in: store).uuid
        let newcomer = UUID()
        // Batches a peer may send, though neither builder does: ada found by login, renamed by id (with a
        // non-key column), then "ada" asked for again, and a post by that newcomer.
        let changes = Tributary_V1_ChangeSet.with {
            $0.batches = [
                .inserting("User", "login", "ada"),
                .inserting("User", ids: [ada], [.strings("login", ["eve"]), .strings("name", ["Eve"])]),
                .inserting("User", "login", "ada", id: newcomer),
                .inserting("Post", ids: [UUID()], [.strings("title", ["hello"]), .references("author", [newcomer])]),
            ]
        }
        _ = try await store.store.saves.applySave(SaveRequest(changes: changes), from: "test")
        let (users, posts) = try await Self.contents(store)
        #expect(users == ["ada", "eve"])
        #expect(posts == ["hello": "ada"])
    }

    @Test("an insert of two constraints' columns merged into a stored user is a change the feed carries")
    func twoConstraintMergeIsAChange() async throws {
        let store = try TemporaryStore(modelJSON: Self.twoKeysModelJSON)
        let first = Tributary_V1_ChangeSet.with {
            $0.batches = [.inserting("User", ids: [UUID()], [.strings("login", ["ada"]), .strings("email", ["a@x"])])]
        }
        _ = try await store.store.saves.applySave(SaveRequest(changes: first), from: "test")
        // Another id, the same login, a new email: the upsert merges it into ada and writes the email.
        let second = Tributary_V1_ChangeSet.with {
            $0.batches = [.inserting("User", ids: [UUID()], [.strings("login", ["ada"]), .strings("email", ["b@x"])])]
        }
        let outcome = try await store.store.saves.applySave(SaveRequest(changes: second), from: "test")
        guard case .committed(let seq, let events, _, _) = outcome else {
            Issue.record("the save was not committed as a change: \(outcome)")
            return
        }
        #expect(seq == 2)
        let part = try #require(events.parts.first { $0.entity == "User" })
        let didSave = try Tributary_V1_DidSave(serializedBytes: part.body)
        #expect(didSave.updatedIds.count == 16)
        #expect(try await Self.usersAndEmails(store).users == ["ada/b@x"])
    }

    @Test("the didSave and the answer name stored ids: a found author, a merged user, a new post's own id")
    func didSaveNamesStoredIDs() async throws {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        _ = try await store.store.saves.applySave(
            SaveRequest(changes: .with { $0.batches = [.inserting("User", "login", "ada")] }), from: "test")
        _ = try await store.store.saves.applySave(
            SaveRequest(changes: .with { $0.batches = [.inserting("User", "login", "bob")] }), from: "test")
        let ada = try await userID("ada", in: store).uuid
        let bob = try await userID("bob", in: store).uuid
        // "ada" found by a key-only batch under a new id; "bob" merged by an insert that also sets his name; a new
        // post by the found "ada".
        let (foundAda, mergedBob, post) = (UUID(), UUID(), UUID())
        let changes = Tributary_V1_ChangeSet.with {
            $0.batches = [
                .inserting("User", "login", "ada", id: foundAda),
                .inserting("User", ids: [mergedBob], [.strings("login", ["bob"]), .strings("name", ["Bob"])]),
                .inserting("Post", ids: [post], [.strings("title", ["hello"]), .references("author", [foundAda])]),
            ]
        }
        let outcome = try await store.store.saves.applySave(SaveRequest(changes: changes), from: "test")
        guard case .committed(_, let events, let remaps, _) = outcome else {
            Issue.record("the save was not committed as a change: \(outcome)")
            return
        }
        let answered = Dictionary(
            uniqueKeysWithValues: remaps.flatMap { remap in
                (0..<remap.fromIds.count / 16).map {
                    (
                        UUID(bytes: remap.fromIds, at: remap.fromIds.startIndex + $0 * 16),
                        UUID(bytes: remap.toIds, at: remap.toIds.startIndex + $0 * 16)
                    )
                }
            })
        #expect(answered == [foundAda: ada, mergedBob: bob])
        let users = try Tributary_V1_DidSave(
            serializedBytes: try #require(events.parts.first { $0.entity == "User" }).body)
        // The found "ada" changed nothing and is left out; the merged "bob" carries his stored id.
        #expect(users.values.map(\.ids) == [bob.bytes])
        let posts = try Tributary_V1_DidSave(
            serializedBytes: try #require(events.parts.first { $0.entity == "Post" }).body)
        let values = try #require(posts.values.first)
        #expect(values.ids == post.bytes)
        #expect(values.columns.first { $0.name == "author" }?.fixed16 == ada.bytes)
    }
}
