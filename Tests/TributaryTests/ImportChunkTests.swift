import Foundation
import GRDB
import Testing
import TributaryDemo
import TributaryProtocol

@testable import TributaryCoordinator
@testable import TributaryCore

@Suite("Import batches: rows straight into a change set")
struct ImportChunkTests {
    let model = DemoData.model
    let createdAt = "2024-05-01T12:00:00Z"

    func batch(_ rows: [String], model: Model? = nil, entity: String = "PullRequest") throws -> ImportChunk {
        let model = model ?? self.model
        let decoder = try ImportRowDecoder(entity: #require(model.entity(named: entity)), model: model)
        var batch = ImportChunk(model: model)
        for (index, row) in rows.enumerated() {
            try Array(row.utf8).withUnsafeBufferPointer { line in
                try decoder.apply(line, number: index + 1, to: &batch)
            }
        }
        return batch
    }

    /// The change set with every object id replaced by its order of first appearance, so that two change sets
    /// made with different random ids compare equal when they hold the same objects in the same places.
    func canonical(_ changeSet: Tributary_V1_ChangeSet) -> Tributary_V1_ChangeSet {
        var numbers: [Data: UInt64] = [:]
        func renumber(_ bytes: Data) -> Data {
            var out = Data()
            for start in stride(from: 0, to: bytes.count, by: 16) {
                let id = bytes.subdata(in: (bytes.startIndex + start)..<(bytes.startIndex + start + 16))
                if id == Data(NullBitmap.zeroID) {
                    out.append(id)
                    continue
                }
                let number = numbers[id] ?? UInt64(numbers.count + 1)
                numbers[id] = number
                withUnsafeBytes(of: number.bigEndian) { out.append(Data(repeating: 0, count: 8) + $0) }
            }
            return out
        }
        var result = changeSet
        for index in result.batches.indices {
            result.batches[index].ids = renumber(result.batches[index].ids)
            for column in result.batches[index].columns.indices {
                let bytes = result.batches[index].columns[column].fixed16
                result.batches[index].columns[column].fixed16 = renumber(bytes)
            }
        }
        return result
    }

    @Test("rows build the change set a context holding the same find-or-created objects would send")
    func sameAsContext() throws {
        let rows = [
            #"{"number": 1, "title": "a", "merged": false, "additions": 3, "score": 1.5, "createdAt": "\#(createdAt)", "author": {"login": "u1"}, "reviewers": [{"login": "u2"}, {"login": "u1"}, {"login": "u2"}]}"#,
            #"{"number": 2, "title": "b", "merged": true, "additions": 4, "score": null, "createdAt": "\#(createdAt)", "author": {"login": "u3", "name": "Three"}, "reviewers": []}"#,
            #"{"number": 1, "title": "a again", "merged": true, "additions": 5, "createdAt": "\#(createdAt)", "author": null}"#,
            #"{"number": 3, "title": "c", "merged": false, "additions": 6, "createdAt": "\#(createdAt)", "author": {"login": "u2"}, "reviewers": [{"login": "u4"}]}"#,
        ]
        let date = try Date.ISO8601FormatStyle().parse(createdAt)
        let context = ObjectContext(model: model, parent: nil, name: "reference")
        let expected = try context.performAndWait {
            func pullRequest(
                _ number: Int, _ title: String, _ merged: Bool, _ additions: Int, score: AttributeValue?? = .none
            ) throws -> ManagedObject {
                let object = try context.findOrCreate("PullRequest", matching: ["number": .int(Int64(number))])
                try object.setValue(.int(Int64(number)), for: "number")
                try object.setValue(.string(title), for: "title")
                try object.setValue(.bool(merged), for: "merged")
                try object.setValue(.int(Int64(additions)), for: "additions")
                if case .some(let score) = score { try object.setValue(score, for: "score") }
                try object.setValue(.date(date), for: "createdAt")
                return object
            }
            func user(_ login: String) throws -> ManagedObject {
                try context.findOrCreate("User", matching: ["login": .string(login)])
            }
            let first = try pullRequest(1, "a", false, 3, score: .some(.double(1.5)))
            try first.setDestination(user("u1"), for: "author")
            try first.setDestinations([user("u2"), user("u1"), user("u2")], for: "reviewers")
            let second = try pullRequest(2, "b", true, 4, score: .some(nil))
            let three = try user("u3")
            try three.setValue(.string("Three"), for: "name")
            try second.setDestination(three, for: "author")
            try second.setDestinations([], for: "reviewers")
            let again = try pullRequest(1, "a again", true, 5)
            try again.setDestination(nil, for: "author")
            let third = try pullRequest(3, "c", false, 6)
            try third.setDestination(user("u2"), for: "author")
            try third.setDestinations([user("u4")], for: "reviewers")
            return context.takePendingChanges().changeSet
        }
        let built = try batch(rows).changeSet()
        #expect(canonical(built) == canonical(expected))
        // Two shapes of pull request (score set, null included, or not) and two of user (name set or not).
        #expect(built.batches.map(\.entity) == ["PullRequest", "User", "User", "PullRequest"])
    }

    @Test("a key repeated in a batch is one object with the last row's values; a to-many lists each object once")
    func repeatedKeys() throws {
        let built = try batch([
            #"{"number": 7, "title": "old", "merged": false, "additions": 1, "createdAt": "\#(createdAt)", "reviewers": [{"login": "x"}, {"login": "x"}]}"#,
            #"{"number": 7, "title": "new", "merged": false, "additions": 2, "createdAt": "\#(createdAt)", "reviewers": [{"login": "x"}, {"login": "y"}, {"login": "x"}]}"#,
        ]).changeSet()
        let pullRequests = built.batches.filter { $0.entity == "PullRequest" }
        #expect(pullRequests.count == 1)
        #expect(pullRequests.first?.ids.count == 16)
        #expect(pullRequests.first?.columns.first { $0.name == "title" }?.strings == ["new"])
        #expect(pullRequests.first?.columns.first { $0.name == "reviewers" }?.counts == [2])
        #expect(built.batches.filter { $0.entity == "User" }.map { $0.ids.count / 16 } == [2])
    }

    @Test("a to-many of many items lists each object once, in the order first named")
    func manyReviewersOnce() throws {
        // More than the few a pull request has: 40 names, each twice, in order a, b, …, a, b, ….
        let logins = (0..<20).map { "u\($0)" }
        let reviewers = (logins + logins).map { #"{"login": "\#($0)"}"# }.joined(separator: ", ")
        let built = try batch([
            #"{"number": 1, "title": "t", "merged": false, "additions": 1, "createdAt": "\#(createdAt)", "reviewers": [\#(reviewers)]}"#
        ]).changeSet()
        let pullRequest = try #require(built.batches.first { $0.entity == "PullRequest" })
        let column = try #require(pullRequest.columns.first { $0.name == "reviewers" })
        #expect(column.counts == [20])
        let users = try #require(built.batches.first { $0.entity == "User" })
        // The users in the order they were made, which is the order first named.
        #expect(column.fixed16 == users.ids)
    }

    @Test("an id is read at an index of its Data, also from a slice that does not start at 0")
    func uuidFromSlice() {
        let ids = [UUID(), UUID(), UUID()]
        var data = Data([0xFF, 0xFE, 0xFD])
        ids.append(to: &data)
        let slice = data[3...]
        #expect(slice.startIndex == 3)
        #expect((0..<3).map { UUID(bytes: slice, at: slice.startIndex + $0 * 16) } == ids)
        #expect(UUID(bytes: data, at: 3 + 16) == ids[1])
    }

    @Test("keys that differ only in Unicode normalization make two objects, as the store's uniqueness does")
    func keysCompareAsTheStoreDoes() throws {
        let built = try batch([
            #"{"number": 1, "title": "t", "merged": false, "additions": 1, "createdAt": "\#(createdAt)", "author": {"login": "Jos\u00e9"}}"#,
            #"{"number": 2, "title": "t", "merged": false, "additions": 1, "createdAt": "\#(createdAt)", "author": {"login": "Jose\u0301"}}"#,
        ]).changeSet()
        let users = built.batches.filter { $0.entity == "User" }
        #expect(users.map { $0.ids.count / 16 } == [2])
        #expect(
            users.first?.columns.first?.strings.map { Array($0.utf8) } == [
                Array("Jos\u{E9}".utf8), Array("Jose\u{301}".utf8),
            ])
    }

    @Test("a bad row is refused naming its line and the field at fault")
    func errors() throws {
        let valid = #""number": 1, "title": "t", "merged": false, "additions": 1, "createdAt": "\#(createdAt)""#
        let cases: [(String, String)] = [
            (#"{\#(valid), "colour": "red"}"#, "entity 'PullRequest' has no attribute or relationship 'colour'"),
            (#"{"title": "t"}"#, "'PullRequest' rows need 'number'"),
            (#"{"number": 2, "title": "t"}"#, "'PullRequest' is missing required attribute 'merged'"),
            (#"{\#(valid), "author": {"name": "no login"}}"#, "'User' rows need 'login'"),
            (#"{\#(valid), "reviewers": {"login": "x"}}"#, "'PullRequest.reviewers' is a to-many relationship"),
            (#"{\#(valid), "author": [{"login": "x"}]}"#, "'PullRequest.author' is a to-one relationship"),
            (#"{"number": "1"}"#, "'PullRequest.number' is int: expected an integer, got a string"),
            (#"[1]"#, "a row must be a JSON object"),
        ]
        for (row, message) in cases {
            do {
                _ = try batch([#"{\#(valid)}"#, row])
                Issue.record("accepted: \(row)")
            } catch let error as ImportError {
                #expect(error.line == 2, "\(row)")
                #expect(error.message.contains(message), "\(error.message)")
            }
        }
    }

    /// Pull request 1's score, author's login and reviewers' logins as the store holds them, read with a separate
    /// connection.
    static func stored(_ store: TemporaryStore) async throws -> (score: Double?, author: String?, reviewers: [String]) {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: store.directory.path("store.sqlite"), configuration: configuration)
        return try await queue.read { db in
            let row = try #require(
                try Row.fetchOne(
                    db,
                    sql: """
                        SELECT p.score, u.login FROM PullRequest p LEFT JOIN User u ON u._rowid = p.author
                        WHERE p.number = 1
                        """))
            let reviewers = try String.fetchAll(
                db,
                sql: """
                    SELECT u.login FROM PullRequest p JOIN PullRequest_reviewers r ON r.source = p._rowid
                    JOIN User u ON u._rowid = r.destination WHERE p.number = 1 ORDER BY u.login
                    """)
            return (row[0], row[1], reviewers)
        }
    }

    /// A store holding pull request 1 with a score, an author and a reviewer.
    func storeWithPullRequest1() async throws -> TemporaryStore {
        let store = try TemporaryStore(modelJSON: DemoData.modelJSON)
        let first = try batch([
            #"{"number": 1, "title": "a", "merged": false, "additions": 3, "score": 1.5, "createdAt": "\#(createdAt)", "author": {"login": "u1"}, "reviewers": [{"login": "u2"}]}"#
        ]).changeSet()
        _ = try await store.store.saves.applySave(SaveRequest(changes: first), from: "test")
        return store
    }

    @Test("a row's null and [] clear what the store holds for its object; a key the row leaves out changes nothing")
    func nullClearsStoredValues() async throws {
        let store = try await storeWithPullRequest1()
        #expect(try await Self.stored(store) == (1.5, "u1", ["u2"]))
        // Another batch (another job): it does not know the stored object and upserts by number.
        let absent = try batch([
            #"{"number": 1, "title": "b", "merged": false, "additions": 3, "createdAt": "\#(createdAt)"}"#
        ]).changeSet()
        _ = try await store.store.saves.applySave(SaveRequest(changes: absent), from: "test")
        #expect(try await Self.stored(store) == (1.5, "u1", ["u2"]))
        let cleared = try batch([
            #"{"number": 1, "title": "c", "merged": false, "additions": 3, "score": null, "createdAt": "\#(createdAt)", "author": null, "reviewers": []}"#
        ]).changeSet()
        _ = try await store.store.saves.applySave(SaveRequest(changes: cleared), from: "test")
        #expect(try await Self.stored(store) == (nil, nil, []))
    }

    @Test("a context's find-or-created object clears what the store holds where it was set to nil or emptied")
    func contextNilClearsStoredValues() async throws {
        let store = try await storeWithPullRequest1()
        let date = try Date.ISO8601FormatStyle().parse(createdAt)
        let context = store.makeContext()
        try await context.perform { context in
            let object = try context.findOrCreate("PullRequest", matching: ["number": .int(1)])
            try object.setValue(.string("c"), for: "title")
            try object.setValue(.bool(false), for: "merged")
            try object.setValue(.int(3), for: "additions")
            try object.setValue(.date(date), for: "createdAt")
            try object.setValue(nil, for: "score")
            try object.setDestination(nil, for: "author")
            try object.setDestinations([], for: "reviewers")
        }
        try await context.save()
        #expect(try await Self.stored(store) == (nil, nil, []))
    }

    /// Teams with a required name, and members pointing to them.
    static let teamsModelJSON = """
        {"entities": [
          {"name": "Team", "attributes": [{"name": "slug", "type": "string"}, {"name": "name", "type": "string"}],
           "uniqueness": [["slug"]]},
          {"name": "Member", "attributes": [{"name": "login", "type": "string"}],
           "relationships": [{"name": "team", "destination": "Team"}]}]}
        """

    @Test("a nested object carrying only its key refers to a stored object whose other required attributes it lacks")
    func keyOnlyReference() async throws {
        let store = try TemporaryStore(modelJSON: Self.teamsModelJSON)
        let first = try batch(
            [#"{"login": "ada", "team": {"slug": "core", "name": "Core team"}}"#], model: store.model,
            entity: "Member")
        _ = try await store.store.saves.applySave(SaveRequest(changes: first.changeSet()), from: "test")
        // A later batch (another job) names the team by its key alone.
        let second = try batch([#"{"login": "bea", "team": {"slug": "core"}}"#], model: store.model, entity: "Member")
        _ = try await store.store.saves.applySave(SaveRequest(changes: second.changeSet()), from: "test")
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: store.directory.path("store.sqlite"), configuration: configuration)
        let members = try await queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT m.login, t.name FROM Member m JOIN Team t ON t._rowid = m.team ORDER BY m.login"
            ).map { "\(String.fromDatabaseValue($0[0]) ?? "")/\(String.fromDatabaseValue($0[1]) ?? "")" }
        }
        #expect(members == ["ada/Core team", "bea/Core team"])
        // A key the store does not have: the object would be new, and it lacks the required name.
        let unknown = try batch([#"{"login": "cid", "team": {"slug": "web"}}"#], model: store.model, entity: "Member")
        await #expect {
            _ = try await store.store.saves.applySave(SaveRequest(changes: unknown.changeSet()), from: "test")
        } throws: { error in
            "\(error)".contains("'Team'") && "\(error)".contains("'name'") && "\(error)".contains("web")
        }
    }

    static func fill(_ object: ManagedObject) throws {
        try object.setValue(.string("t"), for: "title")
        try object.setValue(.bool(false), for: "merged")
        try object.setValue(.int(3), for: "additions")
        try object.setValue(.date(Date(timeIntervalSince1970: 1_700_000_000)), for: "createdAt")
    }

    @Test("an inserted object's nil survives a refused save: the retry still clears the stored value")
    func nilSurvivesRefusedSave() async throws {
        let store = try TemporaryStore(modelJSON: DemoData.modelJSON)
        let seed = store.makeContext()
        try await seed.perform { context in
            let pr = try context.findOrCreate("PullRequest", matching: ["number": .int(1)])
            try Self.fill(pr)
            try pr.setValue(.double(1.5), for: "score")
            try pr.setDestination(try context.findOrCreate("User", matching: ["login": .string("u1")]), for: "author")
        }
        try await seed.save()
        let context = store.makeContext()
        try await context.perform { context in
            let pr = try context.findOrCreate("PullRequest", matching: ["number": .int(1)])
            try Self.fill(pr)
            try pr.setValue(nil, for: "score")
            // An author the store does not have: the save is refused, and the changes stay pending.
            try pr.setDestination(context.object(with: ObjectID(entity: "User", uuid: UUID())), for: "author")
        }
        await #expect(throws: (any Error).self) { try await context.save() }
        try await context.perform { context in
            let pr = try context.findOrCreate("PullRequest", matching: ["number": .int(1)])
            try pr.setDestination(try context.findOrCreate("User", matching: ["login": .string("u1")]), for: "author")
        }
        try await context.save()
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: store.directory.path("store.sqlite"), configuration: configuration)
        let score = try await queue.read { db in try Double?.fetchOne(db, sql: "SELECT score FROM PullRequest") }
        // The row is there (the outer optional) and its score is NULL.
        #expect(score == .some(nil))
    }
}
