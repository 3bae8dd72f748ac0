import Foundation
import SwiftProtobuf
import Testing
import TributaryMessaging

@testable import TributaryCoordinator
@testable import TributaryProtocol

/// docs/security.md's table of roles against the coordinator's rule (``PeerAuthorization/roles(for:)``), for every
/// message of the `Envelope` in tributary.proto: a message added to the protocol and left out of the table fails here.
@Suite("docs/security.md's roles table")
struct RolesDocTests {
    /// The `oneof body` of `Envelope` in tributary.proto: each message type with its field's name.
    static func envelopeBodies() throws -> [(type: String, field: String)] {
        let url = Repository.root.appendingPathComponent("Sources/Shared/Protocol/tributary.proto")
        let text = try String(contentsOf: url, encoding: .utf8)
        let start = try #require(text.range(of: "message Envelope {"))
        let oneof = try #require(text.range(of: "oneof body {", range: start.upperBound..<text.endIndex))
        let end = try #require(text.range(of: "\n  }", range: oneof.upperBound..<text.endIndex))
        return text[oneof.upperBound..<end.lowerBound].split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            guard words.count >= 4, words[2] == "=", words[0].first?.isUppercase == true else { return nil }
            return (String(words[0]), String(words[1]))
        }
    }

    /// The table's rows: message type → the roles marked `yes`; and the rest of the document.
    static func table() throws -> (rows: [String: Set<CurveKeyFile.Role>], text: String) {
        let url = Repository.root.appendingPathComponent("docs/security.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let marker = try #require(text.range(of: "<!-- roles: checked"), "docs/security.md has no roles table")
        var rows: [String: Set<CurveKeyFile.Role>] = [:]
        for line in text[marker.upperBound...].split(separator: "\n").dropFirst().prefix(while: { $0.hasPrefix("|") }) {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4, cells[0].hasPrefix("`") else { continue }
            let name = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let roles: [(CurveKeyFile.Role, String)] = [
                (.worker, cells[1]), (.client, cells[2]), (.subscriber, cells[3]),
            ]
            #expect(roles.allSatisfy { ["yes", "no"].contains($0.1) }, "row \(name): each role's cell is yes or no")
            rows[name] = Set(roles.filter { $0.1 == "yes" }.map(\.0))
        }
        return (rows, text)
    }

    @Test("every request of the protocol has a row giving exactly the roles the coordinator allows")
    func everyRequestListed() throws {
        let bodies = try Self.envelopeBodies()
        #expect(bodies.count > 40, "the .proto's Envelope was not read: \(bodies.count) fields")
        let (rows, text) = try Self.table()
        var requests = Set<String>()
        for (type, field) in bodies {
            // The body case the field makes, through the protocol's own JSON mapping (a field name → its message).
            let envelope = try Tributary_V1_Envelope(jsonString: #"{"\#(field)": {}}"#)
            let body = try #require(envelope.body, "\(field) made no body")
            if let allowed = PeerAuthorization.roles(for: body) {
                requests.insert(type)
                #expect(rows[type] == allowed, "\(type): the table says \(rows[type].map { "\($0)" } ?? "nothing")")
            } else {
                #expect(rows[type] == nil, "\(type) is sent by the coordinator, not a request")
                #expect(text.contains("`\(type)`"), "\(type): the coordinator's messages are named after the table")
            }
        }
        #expect(
            Set(rows.keys) == requests, "rows for no request of the protocol: \(Set(rows.keys).subtracting(requests))")
    }
}
