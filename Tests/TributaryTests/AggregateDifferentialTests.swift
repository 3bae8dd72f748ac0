import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore

/// Random aggregate requests over the store of ``AggregateFetchTests`` (nils among its values, pull requests without
/// an author): each request is generated together with the same query written by hand in SQL, and the store's rows
/// must equal that query's on the test's own connection and the computation in memory over every object.
@Suite("Aggregate fetches: random requests against hand-written SQL and memory")
struct AggregateDifferentialTests {
    /// A key a request may group by or aggregate, with the SQL that reads it for the pull request `p`.
    struct Key {
        let path: String
        let sql: String
        let type: AttributeType

        var isNumeric: Bool { type == .int || type == .double }
    }

    static let author = "(SELECT a.%@ FROM Author a WHERE a._rowid = p.author)"
    static let keys: [Key] = [
        Key(path: "state", sql: "p.state", type: .string),
        Key(path: "additions", sql: "p.additions", type: .int),
        Key(path: "score", sql: "p.score", type: .double),
        Key(path: "created", sql: "p.created", type: .date),
        Key(path: "author.login", sql: String(format: author, "login"), type: .string),
        Key(path: "author.followers", sql: String(format: author, "followers"), type: .int),
        Key(
            path: "reviewers.@count", sql: "(SELECT COUNT(*) FROM PullRequest_reviewers j WHERE j.source = p._rowid)",
            type: .int),
    ]
    /// A to-one relationship groups by its destination, whose id the row holds.
    static let groupKeys = keys + [Key(path: "author", sql: String(format: author, "id"), type: .uuid)]

    static func reviewers(_ function: String) -> String {
        "(SELECT \(function)(a.followers) FROM PullRequest_reviewers j JOIN Author a ON a._rowid = j.destination "
            + "WHERE j.source = p._rowid)"
    }

    /// Predicates on pull requests: a format and the same condition in SQL.
    static let atoms: [(String, String)] = [
        ("additions > 20", "p.additions > 20"),
        ("additions <= 7", "p.additions <= 7"),
        ("state == 'open'", "p.state = 'open'"),
        ("state == nil", "p.state IS NULL"),
        ("score >= 1.0", "p.score >= 1.0"),
        ("author.followers >= 10", String(format: author, "followers") + " >= 10"),
        ("author.login == 'login2'", String(format: author, "login") + " = 'login2'"),
        ("reviewers.@count >= 1", "(SELECT COUNT(*) FROM PullRequest_reviewers j WHERE j.source = p._rowid) >= 1"),
        ("reviewers.@sum.followers > 5", "COALESCE(\(reviewers("SUM")), 0) > 5"),
        ("reviewers.@max.followers >= 10", "\(reviewers("MAX")) >= 10"),
        ("reviewers.@avg.followers < 6", "\(reviewers("AVG")) < 6"),
    ]

    /// A random request and its SQL, and the types of the SQL's columns.
    static func generate(using random: inout SeededGenerator) throws -> (AggregateRequest, String, [AttributeType]) {
        var groupBy: [Key] = []
        for _ in 0..<Int.random(in: 0...2, using: &random) {
            let key = groupKeys.randomElement(using: &random)!
            if !groupBy.contains(where: { $0.path == key.path }) { groupBy.append(key) }
        }
        var aggregates: [(AggregateExpression, String, AttributeType)] = []
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let function = AggregateFunction.allCases.randomElement(using: &random)!
            let key = keys.randomElement(using: &random)!
            let aggregate: (AggregateExpression, String, AttributeType)
            switch function {
            case .count:
                aggregate =
                    Bool.random(using: &random)
                    ? (.count(), "COUNT(*)", .int) : (.count(key.path), "COUNT(\(key.sql))", .int)
            case .sum:
                guard key.isNumeric else { continue }
                aggregate = (.sum(key.path), "COALESCE(SUM(\(key.sql)), 0)", key.type)
            case .avg:
                guard key.isNumeric else { continue }
                aggregate = (.avg(key.path), "AVG(\(key.sql))", .double)
            case .min, .max:
                aggregate = (
                    AggregateExpression(function, key.path), "\(function.rawValue.uppercased())(\(key.sql))", key.type
                )
            }
            if !aggregates.contains(where: { $0.0.name == aggregate.0.name }) { aggregates.append(aggregate) }
        }
        if aggregates.isEmpty { aggregates.append((.count(), "COUNT(*)", .int)) }

        var formats: [String] = []
        var conditions: [String] = []
        let joiner = Bool.random(using: &random) ? " AND " : " OR "
        for _ in 0..<Int.random(in: 0...2, using: &random) {
            let (format, sql) = atoms.randomElement(using: &random)!
            formats.append(format)
            conditions.append("(\(sql))")
        }

        let names = groupBy.map(\.path) + aggregates.map(\.0.name)
        let aliases = names.indices.map { "c\($0)" }
        var having: (String, String)?
        let numeric = aggregates.indices.filter { aggregates[$0].2 == .int || aggregates[$0].2 == .double }
        if let index = numeric.randomElement(using: &random), Bool.random(using: &random) {
            let bound = [0, 1, 3, 10, 30, 100, 300].randomElement(using: &random)!
            let op = [">", "<=", ">="].randomElement(using: &random)!
            having = ("\(aggregates[index].0.name) \(op) \(bound)", "\(aliases[groupBy.count + index]) \(op) \(bound)")
        }

        var sorts: [FetchSort] = []
        var order: [String] = []
        for _ in 0..<Int.random(in: 0...2, using: &random) {
            let index = names.indices.randomElement(using: &random)!
            guard !sorts.contains(where: { $0.key == names[index] }) else { continue }
            let ascending = Bool.random(using: &random)
            sorts.append(FetchSort(names[index], ascending: ascending))
            order.append(aliases[index] + (ascending ? "" : " DESC"))
        }
        for index in groupBy.indices where !sorts.contains(where: { $0.key == names[index] }) {
            order.append(aliases[index])
        }
        let limit = Bool.random(using: &random) ? 0 : Int.random(in: 1...6, using: &random)
        let offset = Bool.random(using: &random) ? 0 : Int.random(in: 0...3, using: &random)

        let request = AggregateRequest(
            entity: "PullRequest",
            predicate: formats.isEmpty ? nil : try FetchPredicate(format: formats.joined(separator: joiner)),
            groupBy: groupBy.map(\.path), aggregates: aggregates.map(\.0),
            having: try having.map { try FetchPredicate(format: $0.0) }, sortedBy: sorts, limit: limit, offset: offset)
        let columns = zip(groupBy.map(\.sql) + aggregates.map(\.1), aliases).map { "\($0) AS \($1)" }
        var sql = "SELECT \(columns.joined(separator: ", ")) FROM PullRequest p"
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: joiner) }
        if !groupBy.isEmpty { sql += " GROUP BY " + aliases.prefix(groupBy.count).joined(separator: ", ") }
        if let having { sql += " HAVING \(having.1)" }
        if !order.isEmpty { sql += " ORDER BY " + order.joined(separator: ", ") }
        sql += " LIMIT \(limit == 0 ? -1 : limit) OFFSET \(offset)"
        return (request, sql, groupBy.map(\.type) + aggregates.map(\.2))
    }

    @Test("300 random requests: the store's rows equal the hand-written SQL's and the computation in memory")
    func randomRequests() async throws {
        let directory = try TemporaryDirectory()
        let (store, subjects, resolver) = try await AggregateFetchTests.store(directory)
        defer { try? store.close() }
        let pulls = subjects.filter { $0.toMany.count == 2 }
        var random = SeededGenerator(seed: 61)
        var rowsSeen = 0
        var grouped = 0
        for _ in 0..<300 {
            let (request, sql, types) = try Self.generate(using: &random)
            let result = try store.aggregate(request)
            let byHand = try await store.pool.read { db in
                try Row.fetchAll(db, sql: sql).map { row in
                    types.indices.map { AttributeValue(row[$0] as DatabaseValue, type: types[$0]) }
                }
            }
            let stored = result.rows.map(\.values)
            #expect(AggregateFetchTests.text(stored) == AggregateFetchTests.text(byHand), "\(request)\n\(sql)")
            let memory = try request.compile(in: AggregateFetchTests.model).rows(of: pulls, resolver: resolver)
            #expect(AggregateFetchTests.text(memory.map(\.values)) == AggregateFetchTests.text(stored), "\(request)")
            rowsSeen += stored.count
            if stored.count > 1 { grouped += 1 }
        }
        // The requests reach many rows, and many hold several groups: a generator that matched nothing would pass.
        #expect(rowsSeen > 600 && grouped > 100, "\(rowsSeen) rows, \(grouped) requests of several groups")
    }
}
