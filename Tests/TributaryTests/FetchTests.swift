import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore

/// Fetch requests through contexts: the store's answer plus the context's (and its parents') unsaved changes,
/// ordered and windowed together, in each result type; faults, refresh, and hostile predicate values.
@Suite("Fetch requests in contexts")
struct FetchTests {
    static let modelJSON = """
        {"entities": [
          {"name": "User", "attributes": [{"name": "login", "type": "string"}], "uniqueness": [["login"]]},
          {"name": "PullRequest",
           "attributes": [{"name": "number", "type": "int"}, {"name": "title", "type": "string"},
                          {"name": "state", "type": "string"}, {"name": "additions", "type": "int"}],
           "relationships": [{"name": "author", "destination": "User"}],
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

    /// Saves pull requests 1...10: state "open" for odd numbers, "closed" for even; additions = number × 10;
    /// title "PR n"; authored by user "alice" (odd) or "bob" (even).
    func seed() async throws {
        let context = makeContext("seed")
        try await context.perform { context in
            for number in 1...10 {
                let pr = try context.insert("PullRequest")
                try pr.setValue(.int(Int64(number)), for: "number")
                try pr.setValue(.string("PR \(number)"), for: "title")
                try pr.setValue(.string(number % 2 == 1 ? "open" : "closed"), for: "state")
                try pr.setValue(.int(Int64(number * 10)), for: "additions")
                let author = try context.findOrCreate(
                    "User", matching: ["login": .string(number % 2 == 1 ? "alice" : "bob")])
                try pr.setDestination(author, for: "author")
            }
        }
        try await context.save()
    }

    static func numbers(_ objects: [ManagedObject]) -> [Int64] {
        objects.map { object in
            if case .int(let number) = object["number"] { return number }
            return -1
        }
    }

    @Test("predicate, sort, limit and offset select from the store; objects, ids and count agree")
    func storeFetch() async throws {
        try await seed()
        let context = makeContext()
        let request = FetchRequest(
            entity: "PullRequest", predicate: try FetchPredicate(format: "state == %@ AND additions > %d", "open", 20),
            sortedBy: [FetchSort("additions", ascending: false)], limit: 2, offset: 1)
        let (numbers, ids, count, all) = try await context.perform { context in
            let objects = try context.fetch(request)
            var unlimited = request
            unlimited.fetchLimit = 0
            unlimited.fetchOffset = 0
            return (
                Self.numbers(objects), try context.fetchObjectIDs(request), try context.count(for: request),
                try context.count(for: unlimited)
            )
        }
        // open with additions > 20: 3, 5, 7, 9 → descending 9, 7, 5, 3 → offset 1, limit 2 → 7, 5.
        #expect(numbers == [7, 5])
        #expect(ids.count == 2)
        #expect(count == 2)
        #expect(all == 4)
    }

    @Test("a fetch sees the context's unsaved inserts, changes and deletes, and sorts them in with stored rows")
    func pendingChanges() async throws {
        try await seed()
        let context = makeContext()
        let open = FetchRequest(
            entity: "PullRequest", predicate: Key("state") == "open", sortedBy: [FetchSort("number")])
        let result = try await context.perform { context -> ([Int64], Int, [Int64]) in
            let before = try context.fetch(open)  // 1, 3, 5, 7, 9
            let inserted = try context.insert("PullRequest")
            try inserted.setValue(.int(4), for: "additions")
            try inserted.setValue(.int(6), for: "number")  // clashes with PR 6 by number only at save
            try inserted.setValue(.string("new"), for: "title")
            try inserted.setValue(.string("open"), for: "state")
            try before[0].setValue(.string("closed"), for: "state")  // PR 1 no longer matches
            context.delete(before[1])  // PR 3 is gone
            let closed2 = try context.fetch(FetchRequest(entity: "PullRequest", predicate: Key("number") == 2))[0]
            try closed2.setValue(.string("open"), for: "state")  // PR 2 now matches
            let after = try context.fetch(open)
            var page = open
            page.fetchLimit = 3
            page.fetchOffset = 1
            return (Self.numbers(after), try context.count(for: open), Self.numbers(try context.fetch(page)))
        }
        #expect(result.0 == [2, 5, 6, 7, 9])
        #expect(result.1 == 5)
        #expect(result.2 == [5, 6, 7])
        // Nothing reached the store.
        let stored = try await makeContext("reader").perform { try $0.count(for: open) }
        #expect(stored == 5)
    }

    @Test("a child context's fetch sees its parent's unsaved changes and its own; the store sees neither")
    func nestedFetch() async throws {
        try await seed()
        let parent = makeContext("parent")
        let child = ObjectContext(model: model, parent: parent, name: "child")
        try await parent.perform { parent in
            let pr = try parent.insert("PullRequest")
            try pr.setValue(.int(11), for: "number")
            try pr.setValue(.string("parent's"), for: "title")
            try pr.setValue(.string("open"), for: "state")
            try pr.setValue(.int(1), for: "additions")
            let first = try parent.fetch(FetchRequest(entity: "PullRequest", predicate: Key("number") == 1))[0]
            try first.setValue(.string("draft"), for: "state")
        }
        let open = FetchRequest(
            entity: "PullRequest", predicate: Key("state") == "open", sortedBy: [FetchSort("number")])
        let seen = try await child.perform { child -> [Int64] in
            let pr = try child.insert("PullRequest")
            try pr.setValue(.int(12), for: "number")
            try pr.setValue(.string("child's"), for: "title")
            try pr.setValue(.string("open"), for: "state")
            try pr.setValue(.int(2), for: "additions")
            return Self.numbers(try child.fetch(open))
        }
        #expect(seen == [3, 5, 7, 9, 11, 12])
        let stored = try await makeContext("reader").perform { try $0.fetchObjectIDs(open).count }
        #expect(stored == 5)
        // The child's save goes to the parent only; the parent's save reaches the store.
        try await child.save()
        #expect(try await makeContext("reader").perform { try $0.count(for: open) } == 5)
        try await parent.save()
        #expect(try await makeContext("reader").perform { try $0.count(for: open) } == 6)
    }

    @Test("ids fetched in one context become objects in another with object(with:), loading on first read")
    func objectWithID() async throws {
        try await seed()
        let background = makeContext("background")
        let ids = try await background.perform { context in
            try context.fetchObjectIDs(
                FetchRequest(entity: "PullRequest", predicate: Key("author") != nil, sortedBy: [FetchSort("number")]))
        }
        #expect(ids.count == 10)
        let ui = makeContext("ui")
        let (wasFault, title, isFault) = try await ui.perform { ui in
            let object = try ui.object(with: ids[2])
            let wasFault = object.isFault
            return (wasFault, object["title"], object.isFault)
        }
        #expect(wasFault && !isFault)
        #expect(title == .string("PR 3"))
    }

    @Test("refresh reloads an object: without merging it drops unsaved changes, with merging keeps them on top")
    func refresh() async throws {
        try await seed()
        let context = makeContext()
        let other = makeContext("other")
        let request = FetchRequest(entity: "PullRequest", predicate: Key("number") == 4)
        try await context.perform { try $0.fetch(request)[0].setValue(.string("mine"), for: "title") }
        try await other.perform { try $0.fetch(request)[0].setValue(.int(999), for: "additions") }
        try await other.save()
        let merged = try await context.perform { context in
            let object = try context.fetch(request)[0]
            try context.refresh(object, mergeChanges: true)
            return (object["title"], object["additions"], context.hasChanges)
        }
        #expect(merged.0 == .string("mine") && merged.1 == .int(999) && merged.2)
        // The refresh took the stored version: saving now does not conflict.
        try await context.save()
        let discarded = try await context.perform { context in
            let object = try context.fetch(request)[0]
            try object.setValue(.string("dropped"), for: "title")
            try context.refresh(object, mergeChanges: false)
            return (object["title"], context.hasChanges)
        }
        #expect(discarded.0 == .string("mine") && discarded.1 == false)
    }

    @Test("reset forgets every object and unsaved change; a fetch afterwards sees the store again")
    func reset() async throws {
        try await seed()
        let context = makeContext()
        let open = FetchRequest(entity: "PullRequest", predicate: Key("state") == "open")
        let (before, after, registered, hasChanges) = try await context.perform { context in
            let first = try context.fetch(open)
            try first[0].setValue(.string("closed"), for: "state")
            _ = try context.insert("User")
            let before = try context.count(for: open)
            context.reset()
            return (before, try context.count(for: open), context.registeredObjects.count, context.hasChanges)
        }
        #expect(before == 4)
        #expect(after == 5)
        #expect(registered == 0 && !hasChanges)
    }

    @Test("hostile predicate values are bound, never spliced: they match only themselves and harm nothing")
    func hostileValues() async throws {
        let hostile = [
            "x'; DROP TABLE \"PullRequest\"; --", "\" OR 1=1 --", "); DELETE FROM User; (", "Ünïcödé 🚀 \u{202E}rtl",
            "nul\u{0}byte", "%@ %d %K",
        ]
        let context = makeContext()
        try await context.perform { context in
            for (index, title) in hostile.enumerated() {
                let pr = try context.insert("PullRequest")
                try pr.setValue(.int(Int64(100 + index)), for: "number")
                try pr.setValue(.string(title), for: "title")
                try pr.setValue(.string("open"), for: "state")
                try pr.setValue(.int(0), for: "additions")
            }
        }
        try await context.save()
        let reader = makeContext("reader")
        for (index, title) in hostile.enumerated() {
            let request = FetchRequest(
                entity: "PullRequest", predicate: try FetchPredicate(format: "title == %@", title))
            let compiled = try #require(request.predicate).compile(
                for: try #require(model.entity(named: "PullRequest")))
            #expect(!compiled.sql.contains(title))
            // One bound value holding the string's bytes (text, or a blob where SQLite text would stop at NUL).
            let bound = compiled.arguments.map(\.databaseValue).map {
                Data.fromDatabaseValue($0) ?? Data((String.fromDatabaseValue($0) ?? "").utf8)
            }
            #expect(bound == [Data(title.utf8)], "\(compiled.sql)")
            let (found, titles) = try await reader.perform { reader in
                let objects = try reader.fetch(request)
                return (Self.numbers(objects), objects.map { $0["title"] })
            }
            #expect(found == [Int64(100 + index)], "\(title.debugDescription) matches only itself")
            #expect(titles == [.string(title)], "the fetched title keeps every byte")
        }
        let counts = try await reader.perform { reader in
            (
                try reader.count(for: FetchRequest(entity: "PullRequest")),
                try reader.count(for: FetchRequest(entity: "User"))
            )
        }
        #expect(counts == (hostile.count, 0))
    }

    @Test("a predicate naming what the entity lacks is refused by name before anything is asked of the store")
    func invalidPredicates() async throws {
        let context = makeContext()
        let problems = try await context.perform { context -> [String] in
            var messages: [String] = []
            for predicate in [Key("nope") == 1, Key("title") > 5] {
                do {
                    _ = try context.fetch(FetchRequest(entity: "PullRequest", predicate: predicate))
                } catch let error as FetchPredicateError {
                    messages.append(error.message)
                }
            }
            do {
                _ = try context.count(for: FetchRequest(entity: "Nope"))
            } catch let error as ContextError {
                messages.append(error.message)
            }
            return messages
        }
        #expect(problems.count == 3)
        #expect(problems[0].contains("nope"))
        #expect(problems[1].contains("title"))
        #expect(problems[2].contains("Nope"))
    }
}
