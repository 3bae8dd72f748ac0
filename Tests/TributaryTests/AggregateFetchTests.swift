import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore

/// Aggregate fetches (Core Data's dictionary results): the store's rows against the same query written by hand in
/// SQL on the test's own connection, and against the in-memory computation over every object.
@Suite("Aggregate fetches")
struct AggregateFetchTests {
    static let model: Model = {
        try! Model.decode(
            Data(
                #"""
                {"entities": [
                  {"name": "Author", "attributes": [{"name": "login", "type": "string"},
                    {"name": "followers", "type": "int"}], "uniqueness": [["login"]]},
                  {"name": "PullRequest", "attributes": [{"name": "state", "type": "string", "optional": true},
                    {"name": "additions", "type": "int", "optional": true}, {"name": "score", "type": "double", "optional": true},
                    {"name": "created", "type": "date"}],
                   "relationships": [{"name": "author", "destination": "Author"},
                     {"name": "reviewers", "destination": "Author", "toMany": true}],
                   "indexes": [["state", "author"]]}]}
                """#.utf8), source: "the test's model")
    }()

    /// A store of 4 authors and 120 pull requests with nils among their values; the subjects as memory reads them.
    static func store(_ directory: TemporaryDirectory) async throws -> (RootStore, [PredicateSubject], Resolver) {
        let store = try RootStore.open(path: directory.path("store.sqlite"), model: model)
        let context = ObjectContext(model: model, parent: LocalRootParent(store: store))
        let subjects = try await context.perform { context -> [PredicateSubject] in
            var subjects: [PredicateSubject] = []
            let authors = try (0..<4).map { index -> ManagedObject in
                let author = try context.insert("Author")
                try author.setValue(.string("login\(index)"), for: "login")
                try author.setValue(.int(Int64(index * 10)), for: "followers")
                subjects.append(
                    PredicateSubject(
                        id: author.objectID.uuid, values: [.string("login\(index)"), .int(Int64(index * 10))],
                        toOne: [], toMany: []))
                return author
            }
            for number in 0..<120 {
                let pull = try context.insert("PullRequest")
                let values: [AttributeValue?] = [
                    number % 7 == 0 ? nil : .string(["open", "closed", "merged"][number % 3]),
                    number % 5 == 0 ? nil : .int(Int64(number * 3 % 41)),
                    number % 4 == 0 ? nil : .double(Double(number % 9) / 4),
                    .date(Date(timeIntervalSince1970: Double(1_700_000_000 + number * 977 % 5000))),
                ]
                for (index, name) in ["state", "additions", "score", "created"].enumerated() {
                    try pull.setValue(values[index], for: name)
                }
                let author = number % 11 == 0 ? nil : authors[number % 4]
                try pull.setDestination(author, for: "author")
                let reviewers = Array(authors.prefix(number % 3))
                try pull.setDestinations(reviewers, for: "reviewers")
                subjects.append(
                    PredicateSubject(
                        id: pull.objectID.uuid, values: values, toOne: [author?.objectID.uuid, nil],
                        toMany: [[], reviewers.map(\.objectID.uuid)]))
            }
            return subjects
        }
        _ = try await context.save()
        return (store, subjects, Resolver(objects: Dictionary(uniqueKeysWithValues: subjects.map { ($0.id, $0) })))
    }

    struct Resolver: PredicateResolver {
        let objects: [UUID: PredicateSubject]
        func subject(for id: UUID, entity: String) -> PredicateSubject? { objects[id] }
    }

    /// Rows as comparable text, doubles to 9 significant digits.
    static func text(_ rows: [[AttributeValue?]]) -> [String] {
        rows.map { row in
            row.map { value -> String in
                switch value {
                case nil: "nil"
                case .double(let double)?: String(format: "%.9g", double)
                case .date(let date)?: "date \(date.timeIntervalSince1970)"
                case .uuid(let uuid)?: uuid.uuidString
                case let other?: "\(other)"
                }
            }.joined(separator: " | ")
        }
    }

    @Test(
        "grouped counts, sums, averages, minimums and maximums by an attribute and a to-one key path equal hand-written SQL and the computation in memory"
    )
    func agreesWithSQLAndMemory() async throws {
        let directory = try TemporaryDirectory()
        let (store, subjects, resolver) = try await Self.store(directory)
        defer { try? store.close() }
        let pulls = subjects.filter { $0.toMany.count == 2 }
        let login = "(SELECT a.login FROM Author a WHERE a._rowid = p.author)"
        let reviewers = "(SELECT COUNT(*) FROM PullRequest_reviewers j WHERE j.source = p._rowid)"
        let cases: [(AggregateRequest, String, [AttributeType])] = [
            (
                AggregateRequest(
                    entity: "PullRequest", groupBy: ["author.login"],
                    aggregates: [.count(), .sum("additions"), .avg("score"), .min("created"), .max("state")]),
                "SELECT \(login) AS k, COUNT(*), COALESCE(SUM(additions), 0), AVG(score), MIN(created), MAX(state) "
                    + "FROM PullRequest p GROUP BY k ORDER BY k",
                [.string, .int, .int, .double, .date, .string]
            ),
            (
                AggregateRequest(
                    entity: "PullRequest", predicate: try FetchPredicate(format: "additions > 5"),
                    groupBy: ["state", "reviewers.@count"], aggregates: [.count("score"), .max("author.followers")],
                    having: try FetchPredicate(format: "count_score >= 2"),
                    sortedBy: [FetchSort("count_score", ascending: false)], limit: 5, offset: 1),
                "SELECT state, \(reviewers) AS r, COUNT(score) AS c, "
                    + "MAX((SELECT a.followers FROM Author a WHERE a._rowid = p.author)) FROM PullRequest p "
                    + "WHERE additions > 5 GROUP BY state, r HAVING c >= 2 ORDER BY c DESC, state, r LIMIT 5 OFFSET 1",
                [.string, .int, .int, .int]
            ),
            (
                AggregateRequest(
                    entity: "PullRequest", predicate: try FetchPredicate(format: "reviewers.@sum.followers >= 10"),
                    aggregates: [.count(), .sum("reviewers.@count"), .min("additions")]),
                "SELECT COUNT(*), COALESCE(SUM(\(reviewers)), 0), MIN(additions) FROM PullRequest p WHERE "
                    + "(SELECT COALESCE(SUM(a.followers), 0) FROM PullRequest_reviewers j JOIN Author a "
                    + "ON a._rowid = j.destination WHERE j.source = p._rowid) >= 10",
                [.int, .int, .int]
            ),
            (
                AggregateRequest(
                    entity: "PullRequest", predicate: try FetchPredicate(format: "state == 'none'"),
                    aggregates: [.count(), .sum("score"), .avg("additions"), .max("created")]),
                "SELECT COUNT(*), COALESCE(SUM(score), 0), AVG(additions), MAX(created) FROM PullRequest p "
                    + "WHERE state = 'none'",
                [.int, .double, .double, .date]
            ),
        ]
        for (request, sql, types) in cases {
            let result = try store.aggregate(request)
            let byHand = try await store.pool.read { db in
                try Row.fetchAll(db, sql: sql).map { row in
                    types.indices.map { AttributeValue(row[$0] as DatabaseValue, type: types[$0]) }
                }
            }
            let stored = result.rows.map(\.values)
            #expect(!stored.isEmpty, "\(request)")
            #expect(Self.text(stored) == Self.text(byHand), "\(request)")
            let memory = try request.compile(in: Self.model).rows(of: pulls, resolver: resolver).map(\.values)
            #expect(Self.text(memory) == Self.text(stored), "\(request)")
            #expect(result.names == request.columnNames)
        }
        // Core Data's types: a sum of ints is an int, an average a double, a minimum of dates a date.
        let typed = try store.aggregate(
            AggregateRequest(
                entity: "PullRequest", aggregates: [.sum("additions"), .avg("additions"), .min("created")]))
        if case .int = typed.rows[0]["sum_additions"] {} else { Issue.record("sum: \(typed.rows[0])") }
        if case .double = typed.rows[0]["avg_additions"] {} else { Issue.record("avg: \(typed.rows[0])") }
        if case .date = typed.rows[0]["min_created"] {} else { Issue.record("min: \(typed.rows[0])") }
    }

    @Test("bad aggregate requests are refused before anything is read, each naming its problem")
    func badInput() async throws {
        let cases: [(AggregateRequest, String)] = [
            (AggregateRequest(entity: "PullRequest", aggregates: [.sum("state")]), "a string value"),
            (AggregateRequest(entity: "PullRequest", aggregates: [.sum("title")]), "'title'"),
            (AggregateRequest(entity: "PullRequest", groupBy: ["reviewers.login"], aggregates: [.count()]), "to-many"),
            (
                AggregateRequest(
                    entity: "PullRequest", groupBy: ["state"], aggregates: [.count()],
                    having: try FetchPredicate(format: "state == 'open'")),
                "names no aggregate"
            ),
            (AggregateRequest(entity: "PullRequest", aggregates: [.count(), .count()]), "used twice"),
            (AggregateRequest(entity: "PullRequest", aggregates: [.count()], sortedBy: [FetchSort("x")]), "'x'"),
        ]
        for (request, fragment) in cases {
            let error = #expect(throws: FetchPredicateError.self) { try request.compile(in: Self.model) }
            #expect(error?.message.contains(fragment) == true, "\(error?.message ?? "") lacks \(fragment)")
        }
        let noKey = #expect(throws: FetchPredicateError.self) {
            try FetchPredicate(format: "reviewers.@avg > 3").compile(
                for: Self.model.entity(named: "PullRequest")!, in: Self.model)
        }
        #expect(noKey?.message.contains("@avg needs a to-many relationship before it and an attribute") == true)
    }

    @Test("a sum of ints over 64 bits is an error naming the sum, not a wrap")
    func overflow() async throws {
        let directory = try TemporaryDirectory()
        let store = try RootStore.open(path: directory.path("store.sqlite"), model: Self.model)
        defer { try? store.close() }
        let context = ObjectContext(model: Self.model, parent: LocalRootParent(store: store))
        try await context.perform { context in
            for _ in 0..<2 {
                let pull = try context.insert("PullRequest")
                try pull.setValue(.int(.max), for: "additions")
                try pull.setValue(.date(Date()), for: "created")
            }
        }
        _ = try await context.save()
        let error = #expect(throws: StoreError.self) {
            try store.aggregate(AggregateRequest(entity: "PullRequest", aggregates: [.sum("additions")]))
        }
        #expect(error?.message.contains("overflows a 64-bit integer") == true, "\(String(describing: error))")
    }
}
