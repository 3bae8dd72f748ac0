import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore

@Suite("Predicates across relationships: key paths, ANY/ALL/NONE, @count, [c]/[d]")
struct RelationshipPredicateTests {
    let graph: GraphTable
    var entity: Entity { GraphTable.pullRequest }
    var model: Model { GraphTable.model }

    init() throws {
        graph = try GraphTable(seed: 77, pullRequests: 300)
    }

    /// Checks that SQLite and memory select the same pull requests for the predicate and for its negation, and
    /// that the SQL binds every value. Returns how many matched.
    @discardableResult
    func expectAgreement(_ predicate: FetchPredicate, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        let compiled = try predicate.compile(for: entity, in: model)
        #expect(
            compiled.arguments.count == compiled.sql.filter { $0 == "?" }.count, "\(predicate)",
            sourceLocation: sourceLocation)
        let sql = try graph.sqlIDs(compiled)
        let memory = graph.memoryIDs(compiled)
        #expect(
            sql == memory, "\(predicate): SQL \(sql.count) rows, memory \(memory.count); \(compiled.sql)",
            sourceLocation: sourceLocation)
        let negated = try FetchPredicate.not(predicate).compile(for: entity, in: model)
        let negatedSQL = try graph.sqlIDs(negated)
        #expect(negatedSQL == graph.memoryIDs(negated), "NOT \(predicate)", sourceLocation: sourceLocation)
        #expect(
            sql.count + negatedSQL.count == graph.pullRequests.count, "NOT \(predicate)", sourceLocation: sourceLocation
        )
        return sql.count
    }

    @Test("hand-picked key-path predicates select the same pull requests in SQLite and in memory")
    func agreement() throws {
        let team = graph.teams[2]
        let user = graph.users[3]
        let predicates: [FetchPredicate] = [
            try FetchPredicate(format: "author.login == 'ada'"),
            try FetchPredicate(format: "author.login ==[c] 'ADA'"),
            try FetchPredicate(format: "author.login ==[d] 'ada'"),
            try FetchPredicate(format: "author.login ==[cd] 'JOSE'"),
            try FetchPredicate(format: "author.login IN[cd] {'jose', 'ada'}"),
            try FetchPredicate(format: "author.login BEGINSWITH[cd] 'gra'"),
            try FetchPredicate(format: "author.login CONTAINS[d] 'os'"),
            try FetchPredicate(format: "author.login LIKE[cd] '*e'"),
            try FetchPredicate(format: "author.login > 'm'"),
            try FetchPredicate(format: "author.name == nil"),
            try FetchPredicate(format: "author.name != nil"),
            try FetchPredicate(format: "author.name != 'ada'"),
            try FetchPredicate(format: "author.karma > 2"),
            try FetchPredicate(format: "author.karma == nil"),
            try FetchPredicate(format: "author.team == %@", team),
            try FetchPredicate(format: "author.team != %@", team),
            try FetchPredicate(format: "author.team == nil"),
            try FetchPredicate(format: "author.team.name BEGINSWITH[c] 'core'"),
            try FetchPredicate(format: "author.team.name == nil"),
            try FetchPredicate(format: "ANY reviewers.login == 'ada'"),
            try FetchPredicate(format: "SOME reviewers.login ==[cd] 'ADA'"),
            try FetchPredicate(format: "ALL reviewers.login BEGINSWITH 'a'"),
            try FetchPredicate(format: "NONE reviewers.login IN {'ada', 'grace', 'linus'}"),
            try FetchPredicate(format: "ANY reviewers.name == nil"),
            try FetchPredicate(format: "ALL reviewers.name != nil"),
            try FetchPredicate(format: "ANY reviewers.karma >= 3"),
            try FetchPredicate(format: "ALL reviewers.karma < 3"),
            try FetchPredicate(format: "ANY reviewers.team.name ==[d] 'Equipe'"),
            try FetchPredicate(format: "ANY reviewers.team == nil"),
            try FetchPredicate(format: "ANY reviewers == %@", user),
            try FetchPredicate(format: "NONE reviewers == %@", user),
            try FetchPredicate(format: "ANY reviewers.followers.login CONTAINS[c] 'a'"),
            try FetchPredicate(format: "ALL reviewers.followers.karma > 0"),
            try FetchPredicate(format: "ANY author.followers.login == 'ada'"),
            try FetchPredicate(format: "reviewers.@count > 2"),
            try FetchPredicate(format: "reviewers.@count == 0"),
            try FetchPredicate(format: "reviewers.@count IN {1, 3}"),
            try FetchPredicate(format: "author.followers.@count >= 2"),
            try FetchPredicate(format: "author.followers.@count == 0"),
            try FetchPredicate(format: "ANY reviewers.followers.@count > 2"),
            try FetchPredicate(format: "ALL reviewers.followers.@count == 0"),
            // Eight to-many steps: each step's distinct users, not the product of the fan-outs.
            try FetchPredicate(
                format: "ALL reviewers.followers.followers.followers.followers.followers.followers.followers.karma != 3"
            ),
            try FetchPredicate(
                format: "ANY author.followers.followers.followers.followers.followers.login ==[c] 'ADA'"),
            try FetchPredicate(
                format: "author.login ==[c] 'ada' OR (ANY reviewers.login BEGINSWITH 'j' AND NOT reviewers.@count < 2)"),
            try FetchPredicate(format: "additions > 50 AND NONE reviewers.team.name ==[cd] 'CORE'"),
            Key("author.login").beginsWith("a", caseInsensitive: true, diacriticInsensitive: true)
                || Key.any("reviewers.karma") > 3 && Key("reviewers.@count") >= 2,
        ]
        var trivial: [String] = []
        for predicate in predicates {
            let count = try expectAgreement(predicate)
            if count == 0 || count == graph.pullRequests.count { trivial.append("\(predicate): \(count)") }
        }
        #expect(trivial.count <= 3, "most predicates select some pull requests but not all: \(trivial)")
    }

    @Test("hostile strings through key paths are bound, never spliced, and find exactly their pull requests")
    func hostileStrings() throws {
        for hostile in PredicateSamples.hostile {
            for format in [
                "author.login == %@", "ANY reviewers.login == %@", "ANY reviewers.followers.name CONTAINS[cd] %@",
                "ALL reviewers.login != %@", "author.team.name LIKE[c] %@",
            ] {
                try expectAgreement(try FetchPredicate(format: format, hostile))
            }
            let direct = try FetchPredicate(format: "author.login == %@", hostile).compile(for: entity, in: model)
            let expected = graph.pullRequests.filter { id in
                guard let author = graph.objects[id]!.subject.toOne[0] else { return false }
                return graph.objects[author]!.subject.values[0] == .string(hostile)
            }
            #expect(try graph.sqlIDs(direct) == Set(expected), "\(hostile.debugDescription)")
        }
        #expect(
            try graph.database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \"PullRequest\"") } == 300)
    }

    @Test("random key-path predicates agree between SQLite and memory, on two graphs")
    func randomAgreement() throws {
        for seed in [UInt64(5), 6] {
            let graph = try GraphTable(seed: seed, pullRequests: 150)
            var random = SeededGenerator(seed: seed * 31)
            let strings = GraphTable.strings.map { PredicateValue.string($0) }
            let karma = (-2...6).map { PredicateValue.int(Int64($0)) }
            let counts = (0...5).map { PredicateValue.int(Int64($0)) }
            let users = graph.users.map { PredicateValue.uuid($0) }
            let teams = graph.teams.map { PredicateValue.uuid($0) }
            // Key paths, the quantifiers they take, and the values they compare with.
            let paths: [(String, [FetchPredicate.Quantifier], [PredicateValue], Bool)] = [
                ("author.login", [.direct], strings, true),
                ("author.name", [.direct], strings, true),
                ("author.karma", [.direct], karma, false),
                ("author.team", [.direct], teams, false),
                ("author.team.name", [.direct], strings, true),
                ("reviewers.login", [.any, .all, .none], strings, true),
                ("reviewers.name", [.any, .all, .none], strings, true),
                ("reviewers.karma", [.any, .all, .none], karma, false),
                ("reviewers.team.name", [.any, .all, .none], strings, true),
                ("reviewers", [.any, .none], users, false),
                ("reviewers.followers.login", [.any, .all, .none], strings, true),
                ("author.followers.karma", [.any, .all], karma, false),
                ("reviewers.@count", [.direct], counts, false),
                ("author.followers.@count", [.direct], counts, false),
                ("reviewers.followers.@count", [.any, .all], counts, false),
                ("title", [.direct], strings, true),
                ("additions", [.direct], [.int(10), .int(50), .int(90)], false),
            ]
            func comparison() -> FetchPredicate {
                let (key, quantifiers, pool, isString) = paths.randomElement(using: &random)!
                var op = FetchPredicate.ComparisonOperator.allCases.randomElement(using: &random)!
                if op.isStringOperator && !isString { op = .equal }
                if key.hasSuffix("team") || key == "reviewers", op != .equal, op != .notEqual, op != .in { op = .equal }
                var value = pool.randomElement(using: &random)!
                if op == .in {
                    value = .list(
                        (0..<Int.random(in: 0...3, using: &random)).map { _ in pool.randomElement(using: &random)! })
                } else if (op == .equal || op == .notEqual) && !key.hasSuffix("@count")
                    && Int.random(in: 0..<6, using: &random) == 0
                {
                    value = .null
                } else if op.isStringOperator, case .string(let string) = value {
                    let scalars = Array(string.unicodeScalars)
                    let cut = Int.random(in: 0...scalars.count, using: &random)
                    var pattern = String(
                        String.UnicodeScalarView(op == .endsWith ? scalars.suffix(cut) : scalars.prefix(cut)))
                    if op == .like { pattern += ["*", "?", ""].randomElement(using: &random)! }
                    value = .string(pattern)
                }
                return .comparison(
                    .init(
                        key: key, op: op, value: value,
                        caseInsensitive: isString && Bool.random(using: &random),
                        diacriticInsensitive: isString && Bool.random(using: &random),
                        quantifier: quantifiers.randomElement(using: &random)!))
            }
            func predicate(depth: Int) -> FetchPredicate {
                switch depth > 2 ? 0 : Int.random(in: 0..<5, using: &random) {
                case 1:
                    return .and((0..<Int.random(in: 1...3, using: &random)).map { _ in predicate(depth: depth + 1) })
                case 2: return .or((0..<Int.random(in: 1...3, using: &random)).map { _ in predicate(depth: depth + 1) })
                case 3: return .not(predicate(depth: depth + 1))
                default: return comparison()
                }
            }
            var compiled = 0
            var nonTrivial = 0
            for _ in 0..<300 {
                let candidate = predicate(depth: 0)
                let compiledPredicate: CompiledPredicate
                do {
                    compiledPredicate = try candidate.compile(for: entity, in: model)
                } catch let error as FetchPredicateError {
                    #expect(error.kind == .wrongType, "\(candidate): \(error)")
                    continue
                }
                compiled += 1
                let sql = try graph.sqlIDs(compiledPredicate)
                #expect(sql == graph.memoryIDs(compiledPredicate), "\(candidate): \(compiledPredicate.sql)")
                let negated = try FetchPredicate.not(candidate).compile(for: entity, in: model)
                #expect(try graph.sqlIDs(negated) == graph.memoryIDs(negated), "NOT \(candidate)")
                if !sql.isEmpty && sql.count < graph.pullRequests.count { nonTrivial += 1 }
            }
            #expect(compiled > 200)
            #expect(nonTrivial > compiled / 3, "\(nonTrivial) of \(compiled) select some but not all")
        }
    }

    @Test(
        "key paths that cannot work are refused, naming the entity and key",
        arguments: [
            (
                "author.nope == 1", FetchPredicateError.Kind.unknownKey,
                "entity 'User' has no attribute or to-one relationship named 'nope'"
            ),
            ("nope.login == 1", .unknownKey, "entity 'PullRequest' has no relationship named 'nope'"),
            ("title.length == 1", .unsupported, "'PullRequest.title' is an attribute"),
            ("reviewers.login == 'x'", .unsupported, "write ANY, ALL or NONE before it"),
            ("ANY author.login == 'x'", .unsupported, "ANY needs a key path through a to-many relationship"),
            ("ALL title == 'x'", .unsupported, "ALL needs a key path through a to-many relationship"),
            ("author.@count == 1", .unsupported, "@count needs a to-many relationship"),
            ("reviewers == %@", .unsupported, "is a to-many relationship and cannot be compared"),
            ("reviewers.@count == 'x'", .wrongType, "count of a to-many relationship 'PullRequest.reviewers.@count'"),
            ("author.login > 3", .wrongType, "string attribute 'User.login'"),
            ("author.karma ==[c] 'x'", .wrongType, "[c] needs a string attribute; int attribute 'User.karma'"),
            ("a.b.c.d.e.f.g.h.i.j == 1", .tooComplex, "more than 8 relationships"),
        ])
    func refusals(format: String, kind: FetchPredicateError.Kind, message: String) throws {
        let predicate = try FetchPredicate(format: format, argumentArray: format.contains("%@") ? [graph.users[0]] : [])
        let error = #expect(throws: FetchPredicateError.self) { try predicate.compile(for: entity, in: model) }
        #expect(error?.kind == kind, "\(format): \(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(format): \(String(describing: error))")
    }

    @Test("key paths, quantifiers, @count and [cd] print as formats that parse back, and cross the wire unchanged")
    func formatAndWire() throws {
        for format in [
            "author.login ==[cd] \"ada\"", "ANY reviewers.login BEGINSWITH[d] \"x\"", "ALL reviewers.karma > 2",
            "NONE reviewers.team.name == nil", "reviewers.@count >= 3", "ANY reviewers.followers.@count > 1",
            "author.#any == 1",
        ] {
            let predicate = try FetchPredicate(format: format)
            #expect(predicate.description == format)
            #expect(try FetchPredicate(format: predicate.description) == predicate)
            let bytes = try predicate.wire.serializedData()
            #expect(try FetchPredicate(wire: .init(serializedBytes: bytes)) == predicate)
        }
        #expect(try FetchPredicate(format: "SOME reviewers.login == 'a'") == (Key.any("reviewers.login") == "a"))
        #expect(try FetchPredicate(format: "%K == 1", "author.karma") == (Key("author.karma") == 1))
    }

    @Test("sorts by to-one key paths and @count: SQLite's ORDER BY and the in-memory order agree")
    func sorts() throws {
        let sorts: [[FetchSort]] = [
            [FetchSort("author.login")],
            [FetchSort("author.login", ascending: false)],
            [FetchSort("author.team.name", ascending: false), FetchSort("additions")],
            [FetchSort("author.name"), FetchSort("author.karma", ascending: false), FetchSort("title")],
            [FetchSort("reviewers.@count", ascending: false), FetchSort("author.followers.@count")],
            [FetchSort("author.team"), FetchSort("author")],
        ]
        for keys in sorts {
            let sort = try keys.compile(for: entity, in: model)
            #expect(try graph.sqlOrder(sort) == graph.memoryOrder(sort), "\(keys.map(\.key)): \(sort.sql)")
        }
        let toMany = #expect(throws: FetchPredicateError.self) {
            try [FetchSort("reviewers.login")].compile(for: entity, in: model)
        }
        #expect(toMany?.message.contains("sort by reviewers.@count instead") == true, "\(String(describing: toMany))")
        let unknown = #expect(throws: FetchPredicateError.self) {
            try [FetchSort("author.nope")].compile(for: entity, in: model)
        }
        #expect(unknown?.kind == .unknownKey)
    }

    @Test("predicates as deep as the limits allow, with key paths at every leaf, run on SQLite")
    func deepestKeyPathPredicates() throws {
        // AND and OR alternating to the depth limit, each leaf a two-hop ANY path: SQLite's parser must take it.
        var predicate = try FetchPredicate(format: "ANY reviewers.followers.login CONTAINS[cd] 'a'")
        for level in 1..<PredicateLimits.maxDepth - 1 {
            let leaf =
                level % 2 == 0
                ? try FetchPredicate(format: "author.team.name ==[c] 'core'")
                : try FetchPredicate(format: "reviewers.@count > %d", level % 4)
            predicate = level % 2 == 0 ? .and([predicate, leaf]) : .or([predicate, leaf])
        }
        try expectAgreement(predicate)
    }
}
