import Foundation
import Testing

@testable import TributaryCore

/// `"k0": 0, "k1": 1, …` with `count` members.
private func members(_ count: Int) -> String {
    (0..<count).map { "\"k\($0)\": \($0)" }.joined(separator: ", ")
}

@Suite("NDJSON row parser")
struct JSONParserTests {
    func parse(_ text: String) throws -> JSONValue {
        try parse(Array(text.utf8))
    }

    func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer in try JSONParser.parse(buffer) }
    }

    @Test("values keep their kinds: integers apart from other numbers, booleans apart from both")
    func kinds() throws {
        let value = try parse(
            #" {"i": -42, "big": 9223372036854775807, "d": 1.5, "e": 2e3, "over": 9223372036854775808, "t": true, "n": null, "a": [1, "x"], "o": {}} "#
        )
        guard case .object(let object) = value else {
            Issue.record("not an object")
            return
        }
        #expect(object["i"] == .int(-42))
        #expect(object["big"] == .int(Int64.max))
        #expect(object["d"] == .double(1.5))
        #expect(object["e"] == .double(2000))
        #expect(object["over"] == .double(9_223_372_036_854_775_808))
        #expect(object["t"] == .bool(true))
        #expect(object["n"] == .null)
        #expect(object["a"] == .array([.int(1), .string("x")]))
        #expect(object["o"] == .object([:]))
    }

    @Test("string escapes, including surrogate pairs, and raw UTF-8 decode to the right text")
    func strings() throws {
        #expect(try parse(#""a\"b\\c\/d\n\t\u00e9\ud83d\ude00""#) == .string("a\"b\\c/d\n\té😀"))
        #expect(try parse("\"héllo ✓\"") == .string("héllo ✓"))
        #expect(try parse(#""'; DROP TABLE User; --""#) == .string("'; DROP TABLE User; --"))
    }

    @Test("an ASCII string reads the same plain and escaped, and the same bytes as the store compares them")
    func asciiPlainAndEscaped() throws {
        let plain = try parse(#""octocat""#)
        #expect(plain == .string("octocat"))
        #expect(try parse(#""octocat""#) == plain)
        #expect(try parse(#""""#) == .string(""))
        guard case .string(let text) = plain, case .string(let escaped) = try parse(#""octocat""#) else {
            Issue.record("not strings")
            return
        }
        #expect(UniqueKeyValue(.string(text)) == UniqueKeyValue(.string(escaped)))
        #expect(UniqueKeyValue(.string(text)) != UniqueKeyValue(.string("octocats")))
    }

    @Test(
        "invalid JSON is refused with the reason and position",
        arguments: [
            ("{\"a\": 1,}", "expected a string key"),
            ("[1, 2,]", "unexpected character ']'"),
            ("{\"a\": 01}", "leading zeros"),
            ("{\"a\": \"open", "unterminated string"),
            ("{\"a\": 1} x", "unexpected text after the value"),
            ("{\"a\": 1, \"a\": 2}", "duplicate key \"a\""),
            // Past 16 members repeated keys are looked for in a set: a repeat of an early key and of a late one.
            (
                "{" + members(20) + ", \"k3\": 0}",
                "duplicate key \"k3\""
            ),
            (
                "{" + members(20) + ", \"k19\": 0}",
                "duplicate key \"k19\""
            ),
            (
                "{" + members(17) + ", \"k16\": 0}",
                "duplicate key \"k16\""
            ),
            ("\"\\ud800\"", "unpaired surrogate"),
            ("\"\\x\"", "invalid escape"),
            ("tru", "unexpected end of input"),
            ("1e999", "number out of range"),
            ("-", "expected a digit"),
            ("", "unexpected end of input"),
            (String(repeating: "[", count: 40) + String(repeating: "]", count: 40), "nesting deeper than 32"),
        ])
    func invalid(text: String, reason: String) throws {
        let error = try #require(throws: JSONParser.SyntaxError.self) { try parse(text) }
        #expect(error.reason.contains(reason), "\(error)")
    }

    @Test("an object with many members keeps them all, in order")
    func manyMembers() throws {
        let text = "{" + members(40) + "}"
        guard case .object(let object) = try parse(text) else {
            Issue.record("not an object")
            return
        }
        #expect(object.keys == (0..<40).map { "k\($0)" })
        #expect(object["k39"] == .int(39) && object["k40"] == nil)
    }

    @Test("control characters and invalid UTF-8 inside strings are refused")
    func invalidBytes() throws {
        #expect(throws: JSONParser.SyntaxError.self) { try parse([0x22, 0x01, 0x22]) }
        #expect(throws: JSONParser.SyntaxError.self) { try parse([0x22, 0xC3, 0x28, 0x22]) }
    }
}
