import Foundation
import Testing

@testable import TributaryCore
@testable import TributaryProtocol

/// The worked examples of docs/protocol.md, built in code: what the docs show is what the code sends.
@Suite("docs/protocol.md's worked examples")
struct ProtocolDocTests {
    /// The block that follows `marker` in docs/protocol.md, without its fences.
    static func block(after marker: String) throws -> String {
        let url = Repository.root.appendingPathComponent("docs/protocol.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let start = try #require(text.range(of: marker), "docs/protocol.md has no '\(marker)'")
        let opening = try #require(text.range(of: "```\n", range: start.upperBound..<text.endIndex))
        let closing = try #require(text.range(of: "\n```", range: opening.upperBound..<text.endIndex))
        return String(text[opening.upperBound..<closing.lowerBound])
    }

    @Test("the predicate tree of §8a is what the parser makes of its format string, field for field")
    func predicateTree() throws {
        let format = #"state == %@ AND additions > 100 AND author.login BEGINSWITH[c] "a""#
        let predicate = try FetchPredicate(format: format, "open")
        let shown = try Self.block(after: "<!-- predicate-tree: checked by ProtocolDocTests -->")
        #expect(predicate.wire.textFormatString().trimmingCharacters(in: .newlines) == shown)
        // The text parses back to the same message, and that to the same predicate.
        let parsed = try Tributary_V1_Predicate(textFormatString: shown)
        #expect(parsed == predicate.wire)
        #expect(try FetchPredicate(wire: parsed) == predicate)
        let literal = try FetchPredicate(format: format.replacingOccurrences(of: "%@", with: #""open""#))
        #expect(literal == predicate, "the CLI's literal form sends the same tree")
    }
}
