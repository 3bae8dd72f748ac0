import Foundation
import Testing

@testable import TributaryCore
@testable import TributaryProtocol

/// A comparison, shortly.
private func cmp(
    _ key: String, _ op: FetchPredicate.ComparisonOperator, _ value: PredicateValue, ci: Bool = false
) -> FetchPredicate {
    .comparison(.init(key: key, op: op, value: value, caseInsensitive: ci))
}

@Suite("Predicate format parser")
struct PredicateParserTests {
    @Test(
        "every comparison operator and its spellings",
        arguments: [
            ("a == 1", FetchPredicate.ComparisonOperator.equal), ("a = 1", .equal), ("a != 1", .notEqual),
            ("a <> 1", .notEqual), ("a < 1", .less), ("a <= 1", .lessOrEqual), ("a =< 1", .lessOrEqual),
            ("a > 1", .greater), ("a >= 1", .greaterOrEqual), ("a => 1", .greaterOrEqual), ("a IN 1", .in),
            ("a BEGINSWITH 1", .beginsWith), ("a ENDSWITH 1", .endsWith), ("a CONTAINS 1", .contains),
            ("a LIKE 1", .like), ("a in 1", .in), ("a beginswith 1", .beginsWith), ("a Like 1", .like),
        ])
    func operators(format: String, op: FetchPredicate.ComparisonOperator) throws {
        #expect(try FetchPredicate(format: format) == cmp("a", op, .int(1)))
    }

    @Test("literal values: strings with escapes, numbers, booleans, nil, lists, casts")
    func literals() throws {
        let cases: [(String, PredicateValue)] = [
            ("'open'", .string("open")), ("\"open\"", .string("open")),
            (#"'it\'s \"q\" \\ \n\t\r\0'"#, .string("it's \"q\" \\ \n\t\r\0")),
            ("\"é 🎉 שלום\"", .string("é 🎉 שלום")), ("''", .string("")),
            ("42", .int(42)), ("-7", .int(-7)), ("-9223372036854775808", .int(Int64.min)),
            ("2.5", .double(2.5)), ("-0.5", .double(-0.5)), ("1e3", .double(1000)), ("1.5E-2", .double(0.015)),
            ("99999999999999999999", .double(1e20)), ("1e999", .double(.infinity)),
            ("TRUE", .bool(true)), ("yes", .bool(true)), ("FALSE", .bool(false)), ("No", .bool(false)),
            ("nil", .null), ("NULL", .null),
            ("{1, 'b', 2.5}", .list([.int(1), .string("b"), .double(2.5)])), ("{}", .list([])),
            ("CAST(0, \"NSDate\")", .date(Date(timeIntervalSinceReferenceDate: 0))),
            ("CAST(12.5, 'NSDate')", .date(Date(timeIntervalSinceReferenceDate: 12.5))),
            (
                "CAST(\"00000000-0000-0000-0000-000000000001\", \"UUID\")",
                .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!)
            ),
            ("CAST('AAH/', \"NSData\")", .data(Data([0, 1, 0xFF]))),
        ]
        for (literal, value) in cases {
            #expect(try FetchPredicate(format: "a == \(literal)") == cmp("a", .equal, value), "\(literal)")
        }
    }

    @Test("placeholders: %@ any value, %d %i %ld %lld integers, %f numbers, %K keys")
    func placeholders() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        let id = ObjectID(entity: "User", uuid: UUID())
        #expect(try FetchPredicate(format: "a == %@", "x") == cmp("a", .equal, .string("x")))
        #expect(try FetchPredicate(format: "a == %@", date) == cmp("a", .equal, .date(date)))
        #expect(try FetchPredicate(format: "a == %@", id) == cmp("a", .equal, .uuid(id.uuid)))
        #expect(try FetchPredicate(format: "a == %@", Data([1])) == cmp("a", .equal, .data(Data([1]))))
        #expect(try FetchPredicate(format: "a == %@", String?.none) == cmp("a", .equal, .null))
        #expect(try FetchPredicate(format: "a == %@", AttributeValue.bool(true)) == cmp("a", .equal, .bool(true)))
        for placeholder in ["%d", "%i", "%ld", "%lld", "%li", "%lli"] {
            #expect(
                try FetchPredicate(format: "a > \(placeholder)", 5) == cmp("a", .greater, .int(5)), "\(placeholder)")
        }
        #expect(try FetchPredicate(format: "a > %d", Int32(5)) == cmp("a", .greater, .int(5)))
        #expect(try FetchPredicate(format: "a > %f", 5) == cmp("a", .greater, .double(5)))
        #expect(try FetchPredicate(format: "a > %f", Float(0.5)) == cmp("a", .greater, .double(0.5)))
        #expect(try FetchPredicate(format: "a > %lf", 2.5) == cmp("a", .greater, .double(2.5)))
        #expect(try FetchPredicate(format: "%K == %@", "state", "open") == cmp("state", .equal, .string("open")))
        #expect(
            try FetchPredicate(format: "a == %@ AND b == %@", argumentArray: ["x", 2])
                == .and([cmp("a", .equal, .string("x")), cmp("b", .equal, .int(2))]))
    }

    @Test("IN takes a %@ array or a {...} literal, with %@ elements too")
    func inLists() throws {
        let expected = cmp("a", .in, .list([.string("x"), .string("y")]))
        #expect(try FetchPredicate(format: "a IN %@", ["x", "y"]) == expected)
        #expect(try FetchPredicate(format: "a IN {'x', \"y\"}") == expected)
        #expect(try FetchPredicate(format: "a IN {%@, %@}", "x", "y") == expected)
        #expect(try FetchPredicate(format: "a IN %@", [Int]()) == cmp("a", .in, .list([])))
        #expect(try FetchPredicate(format: "a IN %@", [1, 2] as [Int64]) == cmp("a", .in, .list([.int(1), .int(2)])))
    }

    @Test("[c] makes a comparison case-insensitive")
    func caseInsensitive() throws {
        #expect(try FetchPredicate(format: "a CONTAINS[c] 'x'") == cmp("a", .contains, .string("x"), ci: true))
        #expect(try FetchPredicate(format: "a ==[c] 'x'") == cmp("a", .equal, .string("x"), ci: true))
        #expect(try FetchPredicate(format: "a LIKE [C] 'x'") == cmp("a", .like, .string("x"), ci: true))
        #expect(try FetchPredicate(format: "a IN[c] {'x'}") == cmp("a", .in, .list([.string("x")]), ci: true))
    }

    @Test("NOT binds tighter than AND, AND tighter than OR; parentheses group; keywords in any case")
    func precedence() throws {
        let a = cmp("a", .equal, .int(1))
        let b = cmp("b", .equal, .int(2))
        let c = cmp("c", .equal, .int(3))
        #expect(try FetchPredicate(format: "a == 1 OR b == 2 AND NOT c == 3") == .or([a, .and([b, .not(c)])]))
        #expect(try FetchPredicate(format: "a == 1 || b == 2 && !c == 3") == .or([a, .and([b, .not(c)])]))
        #expect(try FetchPredicate(format: "(a == 1 or b == 2) and not c == 3") == .and([.or([a, b]), .not(c)]))
        #expect(try FetchPredicate(format: "NOT (a == 1 AND b == 2)") == .not(.and([a, b])))
        #expect(try FetchPredicate(format: "NOT NOT a == 1") == .not(.not(a)))
        #expect(try FetchPredicate(format: "((a == 1))") == a)
        // Nested ANDs and ORs flatten, as the builder's do.
        #expect(try FetchPredicate(format: "a == 1 AND (b == 2 AND c == 3)") == .and([a, b, c]))
        #expect(try FetchPredicate(format: "(a == 1 OR b == 2) OR c == 3") == .or([a, b, c]))
        #expect(try FetchPredicate(format: "TRUEPREDICATE") == .constant(true))
        #expect(try FetchPredicate(format: " falsepredicate ") == .constant(false))
        #expect(try FetchPredicate(format: "TRUEPREDICATE AND a == 1") == .and([.constant(true), a]))
    }

    @Test("keys: bare names, #escaped keywords, %K")
    func keys() throws {
        #expect(try FetchPredicate(format: "#not == 1") == cmp("not", .equal, .int(1)))
        #expect(try FetchPredicate(format: "in IN {1}") == cmp("in", .in, .list([.int(1)])))
        #expect(try FetchPredicate(format: "_x9 == 1") == cmp("_x9", .equal, .int(1)))
        #expect(
            try FetchPredicate(format: "%K == 1", "title; DROP TABLE x") == cmp("title; DROP TABLE x", .equal, .int(1)))
    }

    @Test(
        "malformed formats name the problem, the offset and the token",
        arguments: [
            ("title == 'abc", FetchPredicateError.Kind.syntax, "unterminated string", 9, "'abc"),
            ("title ~= 'a'", .syntax, "unexpected character", 6, "~"),
            ("title MATCHES 'a'", .unsupported, "MATCHES", 6, "MATCHES"),
            ("title FOO 'a'", .syntax, "unknown comparison operator", 6, "FOO"),
            ("title == ", .syntax, "expected a value", 9, ""),
            ("== 1", .syntax, "expected a key", 0, "=="),
            ("title == 1 title", .syntax, "expected AND, OR", 11, "title"),
            ("(title == 1", .syntax, "expected ')'", 11, ""),
            ("title == 'a\\q'", .syntax, "unknown escape", 11, "\\q"),
            ("title == %x", .syntax, "unknown placeholder", 9, "%x"),
            ("author. == 'x'", .syntax, "expected a key after '.'", 8, "=="),
            ("@count == 1", .syntax, "must follow a to-many relationship", 0, "@count"),
            ("reviewers.@distinctUnionOfObjects > 1", .unsupported, "only @count, @sum", 10, "@distinctUnionOfObjects"),
            ("reviewers.@ > 1", .syntax, "'@' must be followed by a name", 10, "@"),
            ("ANY == 1", .syntax, "expected a key", 4, "=="),
            ("reviewers.ANY.login == 1", .syntax, "ANY must come before the key path", 10, "ANY"),
            ("SUBQUERY(reviewers, r, r.login == 'x').@count > 0", .unsupported, "SUBQUERY", 0, "SUBQUERY"),
            ("title ==[x] 'x'", .unsupported, "unknown comparison modifier", 8, "[x]"),
            ("title ==[cx] 'x'", .unsupported, "unknown comparison modifier", 8, "[cx]"),
            ("title == $name", .unsupported, "variables", 9, "$name"),
            ("title == other", .unsupported, "another key", 9, "other"),
            ("title IN {1, {2}}", .wrongType, "nested", 13, "{"),
            ("title IN {1 2}", .syntax, "expected ',' or '}'", 12, "2"),
            ("title == 12abc", .syntax, "malformed number", 9, "12a"),
            ("title == CAST(1, 'NSNumber')", .unsupported, "CAST to 'NSNumber'", 17, "'NSNumber'"),
            ("title == CAST('zz', 'UUID')", .wrongType, "UUID string", 14, "'zz'"),
            ("and == 1", .syntax, "expected a key", 0, "and"),
        ])
    func syntaxErrors(format: String, kind: FetchPredicateError.Kind, problem: String, offset: Int, token: String) {
        let error = #expect(throws: FetchPredicateError.self) { try FetchPredicate(format: format) }
        #expect(error?.kind == kind, "\(format): \(String(describing: error))")
        #expect(error?.message.contains(problem) == true, "\(format): \(String(describing: error))")
        #expect(error?.offset == offset, "\(format): \(String(describing: error))")
        #expect(error?.token == token, "\(format): \(String(describing: error))")
        #expect(error?.message.contains("offset \(offset)") == true, "\(format): \(String(describing: error))")
    }

    @Test("missing, extra and mistyped arguments are named")
    func argumentErrors() {
        let missing = #expect(throws: FetchPredicateError.self) { try FetchPredicate(format: "a == %@ AND b == %@", 1) }
        #expect(missing?.kind == .syntax)
        #expect(missing?.message.contains("missing argument for %@") == true)
        #expect(missing?.offset == 17)
        let extra = #expect(throws: FetchPredicateError.self) { try FetchPredicate(format: "a == %@", 1, 2) }
        #expect(
            extra?.message.contains("too many arguments: the format has 1 placeholder but 2 arguments were given")
                == true)
        let none = #expect(throws: FetchPredicateError.self) { try FetchPredicate(format: "TRUEPREDICATE", "x") }
        #expect(none?.message.contains("too many arguments") == true)
        let integer = #expect(throws: FetchPredicateError.self) { try FetchPredicate(format: "a == %d", "7") }
        #expect(integer?.kind == .wrongType)
        #expect(integer?.message.contains("%d needs an integer argument, got string") == true)
        let float = #expect(throws: FetchPredicateError.self) { try FetchPredicate(format: "a == %f", true) }
        #expect(float?.message.contains("%f needs a number argument, got bool") == true)
        let key = #expect(throws: FetchPredicateError.self) { try FetchPredicate(format: "%K == 1", 5) }
        #expect(key?.message.contains("%K needs a string argument") == true)
        let nested = #expect(throws: FetchPredicateError.self) { try FetchPredicate(format: "a IN {%@}", [1, 2]) }
        #expect(nested?.message.contains("nested") == true)
    }

    @Test("depth, length, list and size limits are errors naming the limit")
    func limits() throws {
        let depth = PredicateLimits.maxDepth
        _ = try FetchPredicate(format: String(repeating: "NOT ", count: depth - 1) + "a == 1")
        _ = try FetchPredicate(
            format: String(repeating: "(", count: depth) + "a == 1" + String(repeating: ")", count: depth))
        for format in [
            String(repeating: "NOT ", count: depth) + "a == 1",
            String(repeating: "!", count: 60_000) + "a == 1",
            String(repeating: "(", count: depth + 1) + "a == 1" + String(repeating: ")", count: depth + 1),
            String(repeating: "(", count: 60_000) + "a == 1",
            "a == 1" + String(repeating: " AND (b == 2 OR c == 3", count: depth) + String(repeating: ")", count: depth),
        ] {
            let error = #expect(throws: FetchPredicateError.self) { try FetchPredicate(format: format) }
            #expect(error?.kind == .tooComplex, "\(String(describing: error))")
            #expect(error?.message.contains("deeper than \(depth) levels") == true, "\(String(describing: error))")
        }
        let long = #expect(throws: FetchPredicateError.self) {
            try FetchPredicate(format: "a == '" + String(repeating: "x", count: 70_000) + "'")
        }
        #expect(long?.kind == .tooComplex)
        #expect(long?.message.contains("at most 65536") == true)
        let list = "a IN {" + Array(repeating: "1", count: 10_001).joined(separator: ",") + "}"
        let literal = #expect(throws: FetchPredicateError.self) { try FetchPredicate(format: list) }
        #expect(literal?.kind == .tooComplex)
        #expect(literal?.message.contains("more than 10000 values") == true)
        let array = #expect(throws: FetchPredicateError.self) {
            try FetchPredicate(format: "a IN %@", Array(repeating: 1, count: 10_001))
        }
        #expect(array?.kind == .tooComplex)
        #expect(array?.message.contains("at most 10000") == true)
        _ = try FetchPredicate(format: "a IN %@", Array(repeating: 1, count: 10_000))
        let widest = Array(repeating: "a == 1", count: PredicateLimits.maxNodes - 1).joined(separator: " OR ")
        _ = try FetchPredicate(format: widest)
        let nodes = #expect(throws: FetchPredicateError.self) { try FetchPredicate(format: widest + " OR b == 2") }
        #expect(nodes?.kind == .tooComplex)
        #expect(nodes?.message.contains("more than 500 comparisons and operators") == true)
        let values = #expect(throws: FetchPredicateError.self) {
            try FetchPredicate(
                format: "a IN %@ OR a IN %@ OR a IN %@", Array(repeating: 1, count: 10_000),
                Array(repeating: 1, count: 10_000), [1])
        }
        #expect(values?.message.contains("more than 20000 values") == true)
    }

    /// A random, mostly well-formed format with its arguments, sometimes corrupted by a token inserted, removed or
    /// replaced, and sometimes with an argument too many or too few.
    static func randomFormat(_ random: inout SeededGenerator) -> (String, [any PredicateArgument]) {
        let keys = ["title", "state", "additions", "#in", "%K", "a_1"]
        let operators = [
            "==", "=", "!=", "<>", "<", "<=", "=<", ">", ">=", "=>", "IN", "BEGINSWITH", "ENDSWITH", "CONTAINS",
            "LIKE", "in", "contains",
        ]
        let values = [
            "'a'", "\"b\\\"c\"", "%@", "%d", "%f", "1", "-2.5e3", "TRUE", "no", "nil", "{1, 'x'}", "{}", "{%@}",
            "CAST(0, \"NSDate\")", "'é🎉\\n'", "\"e\u{301}\"", "0.1", "99999999999999999999",
        ]
        let noise = [
            "(", ")", "{", "}", ",", ".", "'", "\"", "%", "%x", "[c]", "[cd]", "AND", "OR", "NOT", "!", "&", "|",
            "$x", "#", "\u{0}", "\\", "MATCHES", "ANY", "1e", "-",
        ]
        func comparison() -> [String] {
            var tokens = [keys.randomElement(using: &random)!, operators.randomElement(using: &random)!]
            if Int.random(in: 0..<4, using: &random) == 0 { tokens[1] += "[c]" }
            tokens.append(values.randomElement(using: &random)!)
            return tokens
        }
        func expression(_ depth: Int) -> [String] {
            switch depth > 2 ? 0 : Int.random(in: 0..<6, using: &random) {
            case 1:
                return expression(depth + 1) + [["AND", "&&", "and"].randomElement(using: &random)!]
                    + expression(depth + 1)
            case 2:
                return expression(depth + 1) + [["OR", "||"].randomElement(using: &random)!] + expression(depth + 1)
            case 3: return [["NOT", "!"].randomElement(using: &random)!] + expression(depth + 1)
            case 4: return ["("] + expression(depth + 1) + [")"]
            default: return Int.random(in: 0..<12, using: &random) == 0 ? ["TRUEPREDICATE"] : comparison()
            }
        }
        var tokens = expression(0)
        if Int.random(in: 0..<3, using: &random) == 0 {
            let index = Int.random(in: 0...tokens.count, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0: tokens.insert(noise.randomElement(using: &random)!, at: index)
            case 1: if index < tokens.count { tokens.remove(at: index) }
            default: if index < tokens.count { tokens[index] = noise.randomElement(using: &random)! }
            }
        }
        let format = tokens.joined(separator: " ")
        let pool: [any PredicateArgument] = [
            "open", "title", 3, 2.5, ["a", "b"], String?.none, true, Date(timeIntervalSince1970: 0),
        ]
        var count = tokens.filter { $0.contains("%") && $0 != "%" && $0 != "%x" }.count
        if Int.random(in: 0..<8, using: &random) == 0 { count += Bool.random(using: &random) ? 1 : -1 }
        let arguments = (0..<max(0, count)).map { _ in pool.randomElement(using: &random)! }
        return (format, arguments)
    }

    @Test("random formats only ever parse or throw FetchPredicateError, and what parses prints back equal")
    func randomFormats() {
        var random = SeededGenerator(seed: 7)
        var parsed = 0
        for _ in 0..<5_000 {
            let (format, arguments) = Self.randomFormat(&random)
            do {
                let predicate = try FetchPredicate(format: format, argumentArray: arguments)
                parsed += 1
                #expect(try FetchPredicate(format: predicate.description) == predicate, "\(format)")
            } catch {
                #expect(error is FetchPredicateError, "\(format): \(error)")
            }
        }
        #expect(parsed > 1_000)
    }

    @Test("random scalars never crash the parser")
    func randomScalars() {
        var random = SeededGenerator(seed: 11)
        for _ in 0..<3_000 {
            let scalars = (0..<Int.random(in: 0...30, using: &random)).compactMap { _ in
                Unicode.Scalar(
                    UInt32.random(in: 0...0x7F, using: &random) | (Bool.random(using: &random) ? 0 : 0x1F300))
            }
            let format = String(String.UnicodeScalarView(scalars))
            do {
                _ = try FetchPredicate(format: format, "x", 1)
            } catch {
                #expect(error is FetchPredicateError)
            }
        }
    }
}

@Suite("Predicate builder, description and wire")
struct PredicateBuilderTests {
    @Test("the Key builder makes what the parser makes")
    func builderMatchesParser() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        let user = ObjectID(entity: "User", uuid: UUID())
        let pairs: [(FetchPredicate, String, [any PredicateArgument])] = [
            (Key("state") == "open", "state == 'open'", []),
            (Key("state") != "open", "state != 'open'", []),
            (Key("additions") < 3, "additions < 3", []),
            (Key("additions") <= 3, "additions <= 3", []),
            (Key("score") > 2.5, "score > 2.5", []),
            (Key("score") >= -1, "score >= -1", []),
            (Key("created") > date, "created > %@", [date]),
            (Key("author") == user, "author == %@", [user]),
            (Key("title") == nil, "title == nil", []),
            (Key("title") != nil, "title != NULL", []),
            (Key("merged") == true, "merged == YES", []),
            (Key("state").in(["open", "closed"]), "state IN {'open', 'closed'}", []),
            (Key("additions").in([1, 2, 3]), "additions IN %@", [[1, 2, 3]]),
            (Key("title").beginsWith("a"), "title BEGINSWITH 'a'", []),
            (Key("title").endsWith("a", caseInsensitive: true), "title ENDSWITH[c] 'a'", []),
            (Key("title").contains("wip", caseInsensitive: true), "title CONTAINS[c] 'wip'", []),
            (Key("title").like("*fix?"), "title LIKE '*fix?'", []),
            (
                Key("state") == "open" && Key("additions") > 10 || !Key("title").contains("wip", caseInsensitive: true),
                "state == 'open' AND additions > 10 OR NOT title CONTAINS[c] 'wip'", []
            ),
            (
                Key("a") == 1 && Key("b") == 2 && Key("c") == 3 && (Key("d") == 4 || Key("e") == 5),
                "a == 1 AND b == 2 AND (c == 3 AND (d == 4 OR e == 5))", []
            ),
            (!(Key("a") == 1 || Key("b") == 2), "NOT (a == 1 OR b == 2)", []),
        ]
        for (built, format, arguments) in pairs {
            #expect(try FetchPredicate(format: format, argumentArray: arguments) == built, "\(format)")
        }
    }

    /// Predicates covering every case, operator and value type.
    static var samples: [FetchPredicate] {
        get throws {
            let token = UUID(uuidString: "6BA7B810-9DAD-11D1-80B4-00C04FD430C8")!
            return [
                .constant(true), .constant(false),
                try FetchPredicate(
                    format: "state ==[c] %@ AND (additions > %d OR score <= %f) AND NOT title CONTAINS 'x'", "open", 3,
                    2.5),
                try FetchPredicate(format: "title == %@", "quote \" and ' and \\ and \n\t\r\0 and é e\u{301} 🎉 שלום"),
                try FetchPredicate(format: "title == %@", "\u{301}starts with a combining mark"),
                try FetchPredicate(format: "title IN %@", PredicateSamples.hostile),
                try FetchPredicate(
                    format: "score IN %@",
                    [0.1, 1e-7, 1e300, -0.0, Double.leastNonzeroMagnitude, .infinity, -.infinity, 3]),
                try FetchPredicate(format: "additions IN %@", [Int64.min, Int64.max, 0]),
                try FetchPredicate(format: "created < %@", Date(timeIntervalSince1970: 1_700_000_000.123)),
                try FetchPredicate(format: "created < %@", Date(timeIntervalSinceReferenceDate: 0.5)),
                try FetchPredicate(format: "token == %@ OR author != %@", token, ObjectID(entity: "User", uuid: token)),
                try FetchPredicate(format: "patch == %@ OR patch == %@", Data([0, 1, 0xFF]), Data()),
                try FetchPredicate(format: "merged == TRUE OR merged == FALSE OR title == nil OR state != nil"),
                try FetchPredicate(format: "TRUEPREDICATE OR NOT NOT FALSEPREDICATE"),
                try FetchPredicate(format: "a LIKE[c] '*\\\\*?' AND b BEGINSWITH 'x' AND c ENDSWITH[c] 'y'"),
                try FetchPredicate(format: "x IN {}"),
                Key("not") == 1 && Key("AND") == 2 && Key("in") == 3 && Key("TruePredicate") == 4,
                !(Key("a") == 1 && Key("b") == 2) || !(Key("c") == 1 || Key("d") == 2) && Key("e") == 3,
            ]
        }
    }

    @Test("description prints a canonical format that parses back to an equal predicate")
    func descriptionRoundTrip() throws {
        for predicate in try Self.samples {
            #expect(try FetchPredicate(format: predicate.description) == predicate, "\(predicate)")
        }
        #expect(
            (Key("state") == "open" && Key("additions") > 10 || !Key("title").contains("wip", caseInsensitive: true))
                .description == "state == \"open\" AND additions > 10 OR NOT title CONTAINS[c] \"wip\"")
        #expect((Key("not") == 1).description == "#not == 1")
        #expect(FetchPredicate.and([]).description == "TRUEPREDICATE")
        #expect(FetchPredicate.or([]).description == "FALSEPREDICATE")
        #expect(FetchPredicate.and([Key("a") == 1]).description == "a == 1")
    }

    @Test("the wire round trip keeps every predicate and sort, through serialized bytes")
    func wireRoundTrip() throws {
        // Dates travel as seconds since 1970; a date whose seconds since 2001 need more bits than that double can
        // hold (such as 0.1s after 2001) comes back within a microsecond, not exactly. The samples' dates fit.
        let nearby = try FetchPredicate(
            wire: FetchPredicate(format: "c < %@", Date(timeIntervalSinceReferenceDate: 0.1)).wire)
        guard case .comparison(let comparison) = nearby, case .date(let date) = comparison.value else {
            Issue.record("expected a date comparison")
            return
        }
        #expect(abs(date.timeIntervalSinceReferenceDate - 0.1) < 1e-6)
        for predicate in try Self.samples {
            let bytes = try predicate.wire.serializedData()
            let decoded = try FetchPredicate(wire: Tributary_V1_Predicate(serializedBytes: bytes))
            #expect(decoded == predicate, "\(predicate)")
        }
        for sort in [FetchSort("title"), FetchSort("created", ascending: false)] {
            #expect(FetchSort(wire: sort.wire) == sort)
        }
        #expect(FetchSort("created", ascending: false).wire.descending)
        // A single IN value travels as a one-element list.
        #expect(try FetchPredicate(wire: cmp("a", .in, .int(1)).wire) == cmp("a", .in, .list([.int(1)])))
    }

    @Test("malformed wire predicates are refused with a FetchPredicateError")
    func wireErrors() throws {
        func refuse(_ message: Tributary_V1_Predicate, _ kind: FetchPredicateError.Kind, _ text: String) {
            let error = #expect(throws: FetchPredicateError.self) { try FetchPredicate(wire: message) }
            #expect(error?.kind == kind, "\(String(describing: error))")
            #expect(error?.message.contains(text) == true, "\(String(describing: error))")
        }
        refuse(Tributary_V1_Predicate(), .syntax, "none of its kinds")
        var comparison = cmp("a", .equal, .int(1)).wire
        comparison.comparison.operator = .unspecified
        refuse(comparison, .syntax, "unspecified")
        comparison.comparison.operator = .UNRECOGNIZED(99)
        refuse(comparison, .syntax, "unknown comparison operator 99")
        comparison = cmp("a", .equal, .int(1)).wire
        comparison.comparison.values = [Tributary_V1_Value()]
        refuse(comparison, .syntax, "Value message has none")
        comparison.comparison.values = []
        refuse(comparison, .syntax, "takes exactly one")
        comparison.comparison.values = [PredicateValue.int(1).wire, PredicateValue.int(2).wire]
        refuse(comparison, .syntax, "takes exactly one")
        var uuid = Tributary_V1_Value()
        uuid.uuidValue = Data(count: 15)
        comparison.comparison.values = [uuid]
        refuse(comparison, .wrongType, "16 bytes")
        var deep = cmp("a", .equal, .int(1)).wire
        for _ in 0..<PredicateLimits.maxDepth {
            var outer = Tributary_V1_Predicate()
            outer.not = deep
            deep = outer
        }
        refuse(deep, .tooComplex, "deeper than \(PredicateLimits.maxDepth)")
        var wide = Tributary_V1_Predicate()
        wide.or.operands = Array(repeating: cmp("a", .equal, .int(1)).wire, count: 3_000)
        refuse(wide, .tooComplex, "more than 500")
        var list = cmp("a", .in, .list([])).wire
        list.comparison.values = Array(repeating: PredicateValue.int(1).wire, count: 10_001)
        refuse(list, .tooComplex, "at most 10000")
    }

    @Test("mutated wire predicates decode to a predicate or a FetchPredicateError")
    func wireNoise() throws {
        var random = SeededGenerator(seed: 3)
        let encodings = try Self.samples.map { try $0.wire.serializedData() }
        var decoded = 0
        for _ in 0..<3_000 {
            var bytes = encodings.randomElement(using: &random)!
            for _ in 0..<Int.random(in: 1...3, using: &random) where !bytes.isEmpty {
                let index = bytes.startIndex + Int.random(in: 0..<bytes.count, using: &random)
                bytes[index] = UInt8.random(in: 0...255, using: &random)
            }
            if Bool.random(using: &random) { bytes = bytes.prefix(Int.random(in: 0...bytes.count, using: &random)) }
            guard let message = try? Tributary_V1_Predicate(serializedBytes: bytes) else { continue }
            do {
                _ = try FetchPredicate(wire: message)
                decoded += 1
            } catch {
                #expect(error is FetchPredicateError)
            }
        }
        #expect(decoded > 0)
    }
}
