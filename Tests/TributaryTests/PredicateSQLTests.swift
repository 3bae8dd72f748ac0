import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore

@Suite("Predicate compilation to SQL and in-memory evaluation")
struct PredicateSQLTests {
    let table: PredicateTable
    var entity: Entity { PredicateTable.pullRequest }

    init() throws {
        table = try PredicateTable(rows: PredicateSamples.rows(count: 200))
    }

    /// The tokens allowed in compiled SQL: column names from the model, operators, `?`, Tributary's functions.
    static let allowedSQLTokens: Set<String> = {
        var tokens: Set<String> = [
            "?", "(", ")", ",", "=", "<>", "<", "<=", ">", ">=", "0", "1", "IS", "NOT", "NULL", "AND", "OR", "IN",
            "CAST", "AS", "TEXT", "BLOB", PredicateSQLFunction.foldKey, PredicateSQLFunction.beginsWith,
            PredicateSQLFunction.endsWith, PredicateSQLFunction.contains, PredicateSQLFunction.like,
            // A to-one relationship's destination id, or the rows whose key is a destination's.
            "SELECT", "FROM", "WHERE", ".", "\"id\"", "\"_rowid\"", "\"tributary_d\"",
        ]
        for entity in PredicateTable.model.entities { tokens.insert(SQLText.quote(entity.name)) }
        for attribute in PredicateTable.pullRequest.attributes { tokens.insert(SQLText.quote(attribute.name)) }
        for relationship in PredicateTable.pullRequest.relationships { tokens.insert(SQLText.quote(relationship.name)) }
        // A to-one relationship compared with an object: the rows its inverse index lists for the destination.
        tokens.formUnion(["source", "destination", "UNION", "ALL", "JOIN", "ON", "\"tributary_i\"", "\"tributary_o\""])
        for entity in PredicateTable.model.entities {
            for relationship in entity.relationships {
                tokens.insert(SQLText.quote(SQLText.inverseTable(entity.name, relationship.name)))
                tokens.insert(SQLText.quote(SQLText.recentInverseTable(entity.name, relationship.name)))
            }
        }
        return tokens
    }()

    /// Splits SQL into quoted identifiers, words, operators and single characters.
    static func sqlTokens(_ sql: String) -> [String] {
        var tokens: [String] = []
        let scalars = Array(sql.unicodeScalars)
        var index = 0
        func isWord(_ scalar: Unicode.Scalar) -> Bool {
            scalar.properties.isAlphabetic || scalar == "_" || ("0"..."9").contains(scalar)
        }
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == " " {
                index += 1
            } else if scalar == "\"" {
                var end = index + 1
                while end < scalars.count {
                    if scalars[end] == "\"" {
                        if end + 1 < scalars.count, scalars[end + 1] == "\"" { end += 2 } else { break }
                    } else {
                        end += 1
                    }
                }
                tokens.append(String(String.UnicodeScalarView(scalars[index...min(end, scalars.count - 1)])))
                index = end + 1
            } else if isWord(scalar) {
                var end = index
                while end < scalars.count, isWord(scalars[end]) { end += 1 }
                tokens.append(String(String.UnicodeScalarView(scalars[index..<end])))
                index = end
            } else if (scalar == "<" || scalar == ">"), index + 1 < scalars.count,
                scalars[index + 1] == "=" || scalars[index + 1] == ">"
            {
                tokens.append(String(String.UnicodeScalarView(scalars[index...index + 1])))
                index += 2
            } else {
                tokens.append(String(scalar))
                index += 1
            }
        }
        return tokens
    }

    /// Compiles, checks the SQL holds nothing but allowed tokens, and checks SQLite and memory select the same rows
    /// for the predicate and its negation. Returns how many rows matched.
    @discardableResult
    func expectAgreement(_ predicate: FetchPredicate, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        let compiled = try predicate.compile(for: entity)
        let stray = Self.sqlTokens(compiled.sql).filter { !Self.allowedSQLTokens.contains($0) }
        #expect(stray.isEmpty, "\(predicate): \(compiled.sql)", sourceLocation: sourceLocation)
        #expect(
            compiled.arguments.count == compiled.sql.filter { $0 == "?" }.count, "\(predicate)",
            sourceLocation: sourceLocation)
        let sql = try table.sqlIDs(compiled)
        let memory = table.memoryIDs(compiled)
        #expect(
            Set(sql) == Set(memory), "\(predicate): SQL \(sql.count) rows, memory \(memory.count)",
            sourceLocation: sourceLocation)
        let negated = try FetchPredicate.not(predicate).compile(for: entity)
        let negatedSQL = try table.sqlIDs(negated)
        #expect(Set(negatedSQL) == Set(table.memoryIDs(negated)), "NOT \(predicate)", sourceLocation: sourceLocation)
        #expect(sql.count + negatedSQL.count == table.rows.count, "NOT \(predicate)", sourceLocation: sourceLocation)
        return sql.count
    }

    @Test("compiled SQL binds every value and never yields NULL")
    func shapes() throws {
        func compile(_ format: String, _ arguments: any PredicateArgument...) throws -> CompiledPredicate {
            try FetchPredicate(format: format, argumentArray: arguments).compile(for: entity)
        }
        var compiled = try compile("state == 'open' AND additions > 10")
        #expect(compiled.sql == #"("state" IS ? AND ("additions" IS NOT NULL AND "additions" > ?))"#)
        #expect(compiled.arguments.map(\.databaseValue) == ["open".databaseValue, 10.databaseValue])
        compiled = try compile("state != 'open' OR title == nil OR author != nil")
        #expect(compiled.sql == #"("state" IS NOT ? OR "title" IS NULL OR "PullRequest"."author" IS NOT NULL)"#)
        // NOT is pushed down to the comparisons, so the SQL nests only where AND and OR alternate.
        compiled = try compile("NOT (state == 'a' OR NOT (additions < 3 AND title == nil))")
        #expect(
            compiled.sql == #"(NOT "state" IS ? AND ("additions" IS NOT NULL AND "additions" < ?) AND "title" IS NULL)"#
        )
        compiled = try compile("TRUEPREDICATE")
        #expect(compiled.sql == "1")
        #expect(try compile("FALSEPREDICATE").sql == "0")
        #expect(try compile("state IN {}").sql == "0")
        compiled = try compile("NOT state IN {'a', 'b'}")
        #expect(compiled.sql == #"NOT ("state" IS NOT NULL AND "state" IN (?, ?))"#)
        compiled = try compile("title CONTAINS[c] %@", "x")
        #expect(compiled.sql == #"tributary_contains(CAST("title" AS BLOB), ?, 1)"#)
        compiled = try compile("title LIKE %@", "x*")
        #expect(compiled.sql == #"tributary_like(?, CAST("title" AS BLOB), 0)"#)
        compiled = try compile("title ==[c] %@", "x")
        #expect(
            compiled.sql
                == #"("title" IS NOT NULL AND tributary_fold_key(CAST("title" AS BLOB), 1) = tributary_fold_key(?, 1))"#
        )
        // Text with a NUL is bound as a blob and cast back, so no byte is lost.
        compiled = try compile("title == %@", "a\0b")
        #expect(compiled.sql == #""title" IS CAST(? AS TEXT)"#)
        #expect(compiled.arguments.map(\.databaseValue) == [Data("a\0b".utf8).databaseValue])
        // Coercions: a whole double for an int, an int for a double, a number of seconds for a date, 0/1 for a bool.
        #expect(try compile("additions == 3.0").arguments.map(\.databaseValue) == [Int64(3).databaseValue])
        #expect(try compile("score == 3").arguments.map(\.databaseValue) == [Double(3).databaseValue])
        #expect(
            try compile("created > 1700000000").arguments.map(\.databaseValue) == [Double(1_700_000_000).databaseValue])
        #expect(try compile("merged == 1").arguments.map(\.databaseValue) == [Int64(1).databaseValue])
        #expect(try compile("merged == YES").arguments.map(\.databaseValue) == [Int64(1).databaseValue])
        let date = Date(timeIntervalSince1970: 1_700_000_000.5)
        #expect(
            try compile("created > %@", date).arguments.map(\.databaseValue) == [Double(1_700_000_000.5).databaseValue])
        compiled = try compile("additions == 1 AND (additions == 2 AND additions == 3) OR NOT TRUEPREDICATE")
        #expect(compiled.sql == #"(("additions" IS ? AND "additions" IS ? AND "additions" IS ?) OR 0)"#)
        #expect(compiled.arguments.map(\.databaseValue) == [1, 2, 3].map { Int64($0).databaseValue })
    }

    @Test(
        "keys and values are checked against the entity, naming the key, its type and the value's",
        arguments: [
            (
                "additions == 'x'", FetchPredicateError.Kind.wrongType,
                "cannot compare int attribute 'PullRequest.additions' with a string value"
            ),
            ("additions == 2.5", .wrongType, "2.5 is not a whole number"),
            ("merged == 2", .wrongType, "bool attribute 'PullRequest.merged' with an int value"),
            ("title == 3", .wrongType, "string attribute 'PullRequest.title' with an int value"),
            ("score == 'x'", .wrongType, "double attribute 'PullRequest.score' with a string value"),
            ("created == TRUE", .wrongType, "date attribute"),
            ("patch == 'x'", .wrongType, "data attribute"),
            ("token == 'x'", .wrongType, "uuid attribute"),
            ("author == 'x'", .wrongType, "to-one relationship 'PullRequest.author' with a string value"),
            ("title CONTAINS 3", .wrongType, "CONTAINS needs a string value"),
            ("additions BEGINSWITH '1'", .wrongType, "BEGINSWITH needs a string attribute"),
            ("additions ==[c] 3", .wrongType, "[c] needs a string attribute"),
            ("title > nil", .wrongType, "can only be compared with nil using == or !=, not >"),
            ("title == {'a'}", .wrongType, "a list can only be compared with IN, not =="),
            ("title IN {nil}", .wrongType, "an IN list cannot hold nil"),
            ("reviewers == nil", .unsupported, "'PullRequest.reviewers' is a to-many relationship"),
            ("nope == 1", .unknownKey, "entity 'PullRequest' has no attribute or to-one relationship named 'nope'"),
            ("NOT (title == 'a' OR login == 'x')", .unknownKey, "named 'login'"),
        ])
    func typeErrors(format: String, kind: FetchPredicateError.Kind, message: String) throws {
        let predicate = try FetchPredicate(format: format)
        let error = #expect(throws: FetchPredicateError.self) { try predicate.compile(for: entity) }
        #expect(error?.kind == kind, "\(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test("keys that are not names, key paths and NaN are refused")
    func hostileKeys() throws {
        let injected = try FetchPredicate(format: "%K == 1", "title; DROP TABLE x")
        let error = #expect(throws: FetchPredicateError.self) { try injected.compile(for: entity) }
        #expect(error?.kind == .unknownKey)
        #expect(error?.message.contains("'title; DROP TABLE x'") == true)
        let quoted = #expect(throws: FetchPredicateError.self) {
            try (Key("title\" = \"title") == 1).compile(for: entity)
        }
        #expect(quoted?.kind == .unknownKey)
        let path = #expect(throws: FetchPredicateError.self) { try (Key("author.login") == "x").compile(for: entity) }
        #expect(path?.kind == .unsupported)
        #expect(path?.message.contains("need the model") == true)
        let hostilePath = #expect(throws: FetchPredicateError.self) {
            try (Key("author.login\" = 1; --") == "x").compile(for: entity, in: PredicateTable.model)
        }
        #expect(hostilePath?.kind == .unknownKey)
        let nan = #expect(throws: FetchPredicateError.self) { try (Key("score") < Double.nan).compile(for: entity) }
        #expect(nan?.kind == .wrongType)
        #expect(nan?.message.contains("NaN") == true)
        #expect(try table.rowCount() == 200)
    }

    @Test("hostile strings are bound verbatim, never spliced, and still find exactly their rows")
    func hostileStrings() throws {
        for hostile in PredicateSamples.hostile {
            let literal = PredicateValue.quote(hostile)
            let pairs: [(FetchPredicate, FetchPredicate)] = [
                (try FetchPredicate(format: "title == %@", hostile), try FetchPredicate(format: "title == \(literal)")),
                (
                    try FetchPredicate(format: "title CONTAINS %@", hostile),
                    try FetchPredicate(format: "title CONTAINS \(literal)")
                ),
                (
                    try FetchPredicate(format: "title IN %@", [hostile, "a"]),
                    try FetchPredicate(format: "title IN {\(literal), 'a'}")
                ),
                (
                    try FetchPredicate(format: "title ==[c] %@", hostile),
                    try FetchPredicate(format: "title ==[c] \(literal)")
                ),
                (
                    try FetchPredicate(format: "title LIKE %@", hostile),
                    try FetchPredicate(format: "title LIKE \(literal)")
                ),
                (
                    try FetchPredicate(format: "title BEGINSWITH[c] %@ OR title ENDSWITH %@", hostile, hostile),
                    try FetchPredicate(format: "title BEGINSWITH[c] \(literal) OR title ENDSWITH \(literal)")
                ),
                (
                    try FetchPredicate(format: "title >= %@ AND NOT title IN[c] %@", hostile, [hostile]),
                    try FetchPredicate(format: "title >= \(literal) AND NOT title IN[c] {\(literal)}")
                ),
            ]
            for (placeholder, quoted) in pairs {
                #expect(placeholder == quoted, "\(hostile.debugDescription)")
                let compiled = try placeholder.compile(for: entity)
                if hostile.count > 2 { #expect(!compiled.sql.contains(hostile), "\(compiled.sql)") }
                let verbatim = [hostile.databaseValue, Data(hostile.utf8).databaseValue]
                #expect(
                    compiled.arguments.contains { verbatim.contains($0.databaseValue) }, "\(hostile.debugDescription)")
                try expectAgreement(placeholder)
            }
            let exact = try FetchPredicate(format: "title == %@", hostile).compile(for: entity)
            let found = try table.sqlIDs(exact)
            // Byte equality, as SQLite compares: Swift's == would also match "é" precomposed with "e\u{301}".
            let expected = table.rows.filter {
                guard case .string(let title)? = $0.values[0] else { return false }
                return title.utf8.elementsEqual(hostile.utf8)
            }.map(\.id)
            #expect(!found.isEmpty, "\(hostile.debugDescription) is in the generated rows")
            #expect(Set(found) == Set(expected), "\(hostile.debugDescription)")
        }
        #expect(try table.rowCount() == 200)
    }

    @Test("SQLite and in-memory evaluation select the same rows, for each predicate and its negation")
    func agreement() throws {
        let date = PredicateSamples.dates[1]
        let user = PredicateSamples.users[1]
        let token = PredicateSamples.tokens[2]
        let predicates: [FetchPredicate] = [
            try FetchPredicate(format: "state == 'open'"),
            try FetchPredicate(format: "state ==[c] 'open'"),
            try FetchPredicate(format: "state != 'open'"),
            try FetchPredicate(format: "state !=[c] 'OPEN'"),
            try FetchPredicate(format: "state == nil"),
            try FetchPredicate(format: "state != nil"),
            try FetchPredicate(format: "title < 'm'"),
            try FetchPredicate(format: "title >= 'Straße'"),
            try FetchPredicate(format: "title <[c] 'M'"),
            try FetchPredicate(format: "title >[c] 'STRASSE'"),
            try FetchPredicate(format: "title ==[c] 'strasse'"),
            try FetchPredicate(format: "title ==[c] 'σας'"),
            try FetchPredicate(format: "title == 'é'"),
            try FetchPredicate(format: "title BEGINSWITH 'a'"),
            try FetchPredicate(format: "title BEGINSWITH[c] 'str'"),
            try FetchPredicate(format: "title ENDSWITH 'e'"),
            try FetchPredicate(format: "title ENDSWITH[c] 'SSE'"),
            try FetchPredicate(format: "title CONTAINS \"'\""),
            try FetchPredicate(format: "title CONTAINS[c] 'drop'"),
            try FetchPredicate(format: "title CONTAINS %@", "\0"),
            try FetchPredicate(format: "title CONTAINS ''"),
            try FetchPredicate(format: "title CONTAINS %@", "\u{301}"),
            try FetchPredicate(format: "title LIKE '*a*'"),
            try FetchPredicate(format: "title LIKE[c] 'str*e'"),
            try FetchPredicate(format: "title LIKE '?'"),
            try FetchPredicate(format: "title LIKE 'abc\\\\*\\\\?'"),
            try FetchPredicate(format: "title LIKE[c] '*Σ'"),
            try FetchPredicate(format: "title IN %@", ["open", "Straße", "a\0b", "", "e\u{301}"]),
            try FetchPredicate(format: "title IN[c] {'STRASSE', 'wip: FIX', 'ǆ'}"),
            try FetchPredicate(format: "additions > 10"),
            try FetchPredicate(format: "additions <= 0"),
            try FetchPredicate(format: "additions == 3.0"),
            try FetchPredicate(format: "additions IN {1, 2, 3, 5.0}"),
            try FetchPredicate(format: "additions != 5"),
            try FetchPredicate(format: "additions >= %@", Int64.max),
            try FetchPredicate(format: "additions < %@", Int64.min + 1),
            try FetchPredicate(format: "score > 0.5"),
            try FetchPredicate(format: "score < 0"),
            try FetchPredicate(format: "score == 0"),
            try FetchPredicate(format: "score >= -0.0"),
            try FetchPredicate(format: "score IN {0.5, 3, %@}", 0.1 + 0.2),
            try FetchPredicate(format: "score > 1e299 OR score < -1e999"),
            try FetchPredicate(format: "score == %@", 9_007_199_254_740_993 as Int64),
            try FetchPredicate(format: "created > %@", date),
            try FetchPredicate(format: "created < 1700000000"),
            try FetchPredicate(format: "created == %@", date),
            try FetchPredicate(format: "created <= 0"),
            try FetchPredicate(format: "merged == TRUE"),
            try FetchPredicate(format: "merged != YES"),
            try FetchPredicate(format: "merged == 0"),
            try FetchPredicate(format: "merged < 1"),
            try FetchPredicate(format: "patch == %@", Data()),
            try FetchPredicate(format: "patch > %@", Data([0x80])),
            try FetchPredicate(format: "patch IN %@", [Data([0]), Data([1, 2])]),
            try FetchPredicate(format: "patch != %@", Data([1, 2])),
            try FetchPredicate(format: "token == %@", token),
            try FetchPredicate(format: "token < %@", token),
            try FetchPredicate(format: "author == %@", ObjectID(entity: "User", uuid: user)),
            try FetchPredicate(format: "author != %@", user),
            try FetchPredicate(format: "author == nil"),
            try FetchPredicate(format: "author > %@", PredicateSamples.users[2]),
            try FetchPredicate(format: "author IN %@", PredicateSamples.users.prefix(2).map { $0 }),
            try FetchPredicate(format: "state == 'open' AND additions > 5 OR title CONTAINS[c] 'wip'"),
            try FetchPredicate(format: "NOT (state == nil OR score < 1) AND merged == TRUE"),
            try FetchPredicate(
                format: "(state ==[c] 'open' OR NOT additions > 3) AND NOT (patch == nil AND token != nil)"),
            try FetchPredicate(format: "TRUEPREDICATE"),
            try FetchPredicate(format: "FALSEPREDICATE OR title LIKE '*'"),
            Key("state") == "open" && Key("additions") > 10 || !Key("title").contains("wip", caseInsensitive: true),
        ]
        var nonTrivial = 0
        for predicate in predicates {
            let count = try expectAgreement(predicate)
            if count > 0 && count < table.rows.count { nonTrivial += 1 }
        }
        #expect(predicates.count >= 60)
        #expect(nonTrivial >= predicates.count - 3, "most predicates select some rows but not all")
    }

    @Test("random predicates over every key, operator and value agree between SQLite and memory")
    func randomAgreement() throws {
        var random = SeededGenerator(seed: 1234)
        let values: [String: [PredicateValue]] = [
            "title": PredicateSamples.titles.map { .string($0) },
            "state": PredicateSamples.states.map { .string($0) },
            "additions": PredicateSamples.integers.map { .int($0) } + [.double(3), .double(-1)],
            "score": PredicateSamples.doubles.filter { !$0.isNaN }.map { .double($0) } + [.int(3), .int(0)],
            "created": PredicateSamples.dates.map { .date($0) } + [.int(0), .double(1_700_000_000)],
            "merged": [.bool(true), .bool(false), .int(0), .int(1)],
            "patch": PredicateSamples.blobs.map { .data($0) },
            "token": PredicateSamples.tokens.map { .uuid($0) },
            "author": PredicateSamples.users.map { .uuid($0) },
        ]
        let keys = values.keys.sorted()
        let operators = FetchPredicate.ComparisonOperator.allCases
        func comparison() -> FetchPredicate {
            let key = keys.randomElement(using: &random)!
            let pool = values[key]!
            var op = operators.randomElement(using: &random)!
            let isString = key == "title" || key == "state"
            if op.isStringOperator && !isString { op = .equal }
            var value = pool.randomElement(using: &random)!
            if op == .in {
                value = .list(
                    (0..<Int.random(in: 0...4, using: &random)).map { _ in pool.randomElement(using: &random)! })
            } else if (op == .equal || op == .notEqual) && Int.random(in: 0..<8, using: &random) == 0 {
                value = .null
            } else if op.isStringOperator, case .string(let string) = value, Bool.random(using: &random) {
                // Patterns cut from real values, so string operators match sometimes.
                let scalars = Array(string.unicodeScalars)
                let cut = scalars.isEmpty ? 0 : Int.random(in: 0...scalars.count, using: &random)
                var pattern = String(
                    String.UnicodeScalarView(op == .endsWith ? scalars.suffix(cut) : scalars.prefix(cut)))
                if op == .like { pattern += ["*", "?", "", "*?"].randomElement(using: &random)! }
                value = .string(pattern)
            }
            let caseInsensitive = isString && Bool.random(using: &random)
            return .comparison(.init(key: key, op: op, value: value, caseInsensitive: caseInsensitive))
        }
        func predicate(depth: Int) -> FetchPredicate {
            switch depth > 3 ? 0 : Int.random(in: 0..<6, using: &random) {
            case 1: return .and((0..<Int.random(in: 0...3, using: &random)).map { _ in predicate(depth: depth + 1) })
            case 2: return .or((0..<Int.random(in: 0...3, using: &random)).map { _ in predicate(depth: depth + 1) })
            case 3: return .not(predicate(depth: depth + 1))
            default: return comparison()
            }
        }
        var compiled = 0
        for _ in 0..<600 {
            let candidate = predicate(depth: 0)
            do {
                _ = try candidate.compile(for: entity)
            } catch let error as FetchPredicateError {
                #expect(error.kind == .wrongType, "\(candidate): \(error)")
                continue
            }
            compiled += 1
            try expectAgreement(candidate)
        }
        #expect(compiled > 400)
    }

    @Test("sorts: SQLite's ORDER BY and the in-memory comparator give the same order")
    func sorts() throws {
        let sorts: [[FetchSort]] = [
            [], [FetchSort("title")], [FetchSort("title", ascending: false)],
            [FetchSort("additions", ascending: false), FetchSort("score")], [FetchSort("score")],
            [FetchSort("score", ascending: false)], [FetchSort("created", ascending: false), FetchSort("merged")],
            [FetchSort("patch")], [FetchSort("token", ascending: false)],
            [FetchSort("author", ascending: false), FetchSort("title")],
            [FetchSort("state"), FetchSort("title"), FetchSort("additions", ascending: false)],
            [FetchSort("merged", ascending: false), FetchSort("patch", ascending: false)],
        ]
        for sort in sorts {
            let compiled = try sort.compile(for: entity)
            #expect(compiled.sql.hasSuffix(#""id""#))
            #expect(try table.sqlIDs(nil, compiled) == table.memoryOrder(compiled), "\(sort)")
        }
        let filter = try FetchPredicate(format: "state ==[c] 'open' OR score > 0").compile(for: entity)
        let order = try [FetchSort("title", ascending: false), FetchSort("created")].compile(for: entity)
        let memory = table.memoryOrder(order).filter(Set(table.memoryIDs(filter)).contains)
        #expect(try table.sqlIDs(filter, order) == memory)
    }

    @Test("sort SQL names the columns and ends with the id; bad sort keys are refused")
    func sortSQL() throws {
        #expect(try [FetchSort("created", ascending: false)].compile(for: entity).sql == #""created" DESC, "id""#)
        // A to-one relationship sorts by its destination's id.
        let author = SQLText.toOneID(table: "PullRequest", relationship: "author", destination: "User")
        #expect(
            try [FetchSort("title"), FetchSort("author")].compile(for: entity).sql == "\"title\", \(author), \"id\"")
        #expect(try [FetchSort]().compile(for: entity).sql == #""id""#)
        let unknown = #expect(throws: FetchPredicateError.self) { try [FetchSort("nope")].compile(for: entity) }
        #expect(unknown?.kind == .unknownKey)
        #expect(unknown?.message.contains("'nope'") == true)
        let toMany = #expect(throws: FetchPredicateError.self) { try [FetchSort("reviewers")].compile(for: entity) }
        #expect(toMany?.kind == .unsupported)
        #expect(toMany?.message.contains("cannot be sorted by") == true)
        let many = #expect(throws: FetchPredicateError.self) {
            try Array(repeating: FetchSort("title"), count: 65).compile(for: entity)
        }
        #expect(many?.kind == .tooComplex)
    }

    @Test("the largest predicates the limits allow compile and run on SQLite, inside a fetch's own clauses")
    func largestPredicates() throws {
        let depth = PredicateLimits.maxDepth
        // The comparisons whose SQL nests deepest.
        let leaves: [FetchPredicate] = [
            .comparison(.init(key: "title", op: .in, value: ["a", "é"].predicateValue, caseInsensitive: true)),
            .comparison(.init(key: "title", op: .notEqual, value: .string("a\0"), caseInsensitive: true)),
            Key("title").like("*a*", caseInsensitive: true), Key("score") >= 0.5,
            // A to-one relationship compared with an object: a subquery over both halves of its inverse index.
            .comparison(
                .init(
                    key: "author", op: .equal,
                    value: .uuid(try #require(table.rows.lazy.compactMap { $0.toOne[0] }.first)))),
        ]
        var shapes: [FetchPredicate] = []
        for leaf in leaves {
            // AND and OR alternating to the deepest level, the nested group last (the parser's worst case) or
            // first, with NOTs that De Morgan removes.
            var last = leaf
            var first = leaf
            var negated = leaf
            for level in 0..<(depth - 1) {
                last = level % 2 == 0 ? .and([leaf, last]) : .or([leaf, last])
                first = level % 2 == 0 ? .and([first, leaf]) : .or([first, leaf])
            }
            for _ in 0..<((depth - 1) / 2) { negated = .not(.and([leaf, negated])) }
            shapes += [last, first, negated]
        }
        // The most nodes: a flat chain, and chains whose first operand nests.
        let leaf = leaves[0]
        shapes.append(.or(Array(repeating: leaf, count: PredicateLimits.maxNodes - 1)))
        var chained = leaf
        for _ in 0..<((depth - 1) / 2) {
            chained = .and([.or([chained] + Array(repeating: leaf, count: 15))] + Array(repeating: leaf, count: 15))
        }
        shapes.append(chained)
        // The most values: two IN lists of 10,000, one case-insensitive.
        let strings = (0..<PredicateLimits.maxListElements).map { "value \($0)" } + ["a"]
        shapes.append(
            .or([
                Key("title").in(strings.dropLast()),
                .comparison(
                    .init(
                        key: "state", op: .in, value: strings.dropFirst().map { $0 }.predicateValue,
                        caseInsensitive: true)),
            ]))
        for shape in shapes {
            #expect(throws: Never.self) { try shape.checkLimits() }
            let compiled = try shape.compile(for: entity)
            // As a fetch would run it: inside its own clauses, with an order.
            let sql = """
                SELECT id FROM "PullRequest" WHERE (\(compiled.sql)) AND id NOT IN (SELECT id FROM "PullRequest" \
                WHERE id = x'00') ORDER BY "title" DESC, "id" LIMIT 1000
                """
            let found = try table.database.read { db in
                try Data.fetchAll(db, sql: sql, arguments: StatementArguments(compiled.arguments.map(\.databaseValue)))
                    .map { UUID(bytes: $0, at: $0.startIndex) }
            }
            #expect(Set(found) == Set(table.memoryIDs(compiled)))
        }
        // One level or node more is refused.
        let tooDeep = #expect(throws: FetchPredicateError.self) {
            try FetchPredicate.not(shapes[0]).compile(for: entity)
        }
        #expect(tooDeep?.kind == .tooComplex)
        let tooWide = #expect(throws: FetchPredicateError.self) {
            try FetchPredicate.or(Array(repeating: leaf, count: PredicateLimits.maxNodes)).compile(for: entity)
        }
        #expect(tooWide?.kind == .tooComplex)
        // Nesting built by hand far beyond the limit is refused without deep recursion. (Not too far: releasing an
        // indirect enum is itself recursive, so a tree of 100,000 levels would overflow a test thread's stack.)
        var absurd = Key("title") == "a"
        for _ in 0..<2_000 { absurd = .not(absurd) }
        let nested = #expect(throws: FetchPredicateError.self) { try absurd.compile(for: entity) }
        #expect(nested?.message.contains("deeper than \(depth)") == true)
    }
}

@Suite("Predicates against a root store")
struct PredicateStoreTests {
    @Test("the store registers the predicate functions, and saved objects are found as memory finds them")
    func rootStore() async throws {
        let directory = try TemporaryDirectory()
        let model = PredicateTable.model
        let store = try RootStore.open(path: directory.path("store.sqlite"), model: model)
        defer { try? store.close() }
        let context = ObjectContext(model: model, parent: LocalRootParent(store: store))
        let generated = PredicateSamples.rows(count: 60, seed: 99)
        let rows = try await context.perform { context -> [PredicateRow] in
            let users = try PredicateSamples.users.indices.map { index -> ManagedObject in
                let user = try context.insert("User")
                try user.setValue(.string("user\(index)"), for: "login")
                return user
            }
            let entity = PredicateTable.pullRequest
            return try generated.map { row in
                let object = try context.insert("PullRequest")
                for (index, attribute) in entity.attributes.enumerated() {
                    try object.setValue(row.values[index], for: attribute.name)
                }
                let author = row.toOne[0].flatMap { PredicateSamples.users.firstIndex(of: $0) }.map { users[$0] }
                try object.setDestination(author, for: "author")
                return PredicateRow(
                    id: object.objectID.uuid, values: row.values, toOne: [author?.objectID.uuid, nil])
            }
        }
        _ = try await context.save()
        let predicates = [
            try FetchPredicate(format: "title ==[c] %@ OR title CONTAINS %@", "strasse", "\0"),
            try FetchPredicate(format: "title LIKE[c] '*a*' AND NOT state BEGINSWITH[c] 'o'"),
            try FetchPredicate(format: "title IN[c] %@", PredicateSamples.hostile),
            try FetchPredicate(format: "score > 0 OR score == nil OR created < %@", PredicateSamples.dates[2]),
            try FetchPredicate(format: "patch == %@ OR merged == NO", Data()),
            try FetchPredicate(format: "author != nil AND token ENDSWITH 'x' OR additions > 2"),
        ]
        let entity = PredicateTable.pullRequest
        for predicate in predicates {
            let compiled: CompiledPredicate
            do {
                compiled = try predicate.compile(for: entity)
            } catch {
                // `token ENDSWITH` is not a string comparison: make sure that is the refusal.
                #expect((error as? FetchPredicateError)?.kind == .wrongType)
                continue
            }
            let found = try await store.pool.read { db in
                try Data.fetchAll(
                    db, sql: "SELECT id FROM \"PullRequest\" WHERE \(compiled.sql)",
                    arguments: StatementArguments(compiled.arguments.map(\.databaseValue)))
            }
            let expected = rows.filter { compiled.evaluate(values: $0.values, toOne: $0.toOne) }.map(\.id.bytes)
            #expect(Set(found) == Set(expected), "\(predicate)")
        }
        let sort = try [FetchSort("title", ascending: false), FetchSort("score")].compile(for: entity)
        let ordered = try await store.pool.read { db in
            try Data.fetchAll(db, sql: "SELECT id FROM \"PullRequest\" ORDER BY \(sort.sql)")
        }
        let memory = rows.sorted {
            sort.areInIncreasingOrder(($0.id, $0.values, $0.toOne), ($1.id, $1.values, $1.toOne))
        }
        #expect(ordered == memory.map(\.id.bytes))
    }
}
