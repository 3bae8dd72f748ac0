import Foundation
import Testing

@testable import TributaryCore
@testable import TributaryDemo

/// docs/model.schema.json, for editors, against the model loader (the authority): the same verdict on every
/// model the schema can judge, validated by Python's `jsonschema` (`make test` installs it).
@Suite("Model schema: docs/model.schema.json agrees with the loader")
struct ModelSchemaTests {
    static let root = Repository.root

    /// The schema's verdict on each document: nil when valid, else the reason.
    static func schemaVerdicts(_ documents: [String]) async throws -> [String?] {
        let input = "[" + documents.joined(separator: ",\n") + "]"
        let directory = try TemporaryDirectory()
        let path = try directory.write("models.json", Data(input.utf8))
        let started = try StartedProcess.start(
            executable: URL(fileURLWithPath: "/bin/sh"),
            ["-c", "exec python3 \"$0\" --stdin < \"$1\"", Self.root.path + "/scripts/check-model-schema.py", path])
        let result = try await started.finish(timeout: .seconds(60))
        try #require(result.status == 0, "check-model-schema.py: \(result.error.joined(separator: "\n"))")
        try #require(result.output.count == documents.count)
        return result.output.map { $0 == "ok" ? nil : $0 }
    }

    /// Whether the loader takes `document`.
    static func loads(_ document: String) -> Bool {
        (try? Model.decode(Data(document.utf8))) != nil
    }

    static func entity(_ body: String) -> String { #"{"entities": [\#(body)]}"# }

    @Test("valid models, and models each wrong in one way the schema can see, get the same verdict from both")
    func agreement() async throws {
        let valid = [
            DemoData.modelJSON,
            everyTypeModelJSON,
            KnownKeysTests.twoKeysModelJSON,
            try String(
                contentsOf: Self.root.appendingPathComponent("Tests/Fixtures/store-format-5/model.json"),
                encoding: .utf8),
            Self.entity(
                #"{"name": "Node", "relationships": [{"name": "parent", "destination": "Node", "deleteRule": "cascade"}, {"name": "children", "destination": "Node", "toMany": true, "deleteRule": "deny"}]}"#
            ),
            Self.entity(
                #"{"name": "_x9", "attributes": [{"name": "a", "type": "uuid", "optional": false}], "uniqueness": [["a"]]}"#
            ),
            Self.entity(#"{"name": "\#(String(repeating: "a", count: 64))"}"#),
            #"{"$schema": "./model.schema.json", "entities": [{"name": "A"}]}"#,
            Self.entity(
                #"{"name": "A", "attributes": [{"name": "x", "type": "int"}, {"name": "y", "type": "string"}], "relationships": [{"name": "up", "destination": "A"}], "indexes": [["x"], ["y", "up"], ["up", "y"]]}"#
            ),
        ]
        let invalid = [
            #"{}"#,
            #"{"entities": []}"#,
            #"{"entities": {}}"#,
            Self.entity(#"{"attributes": []}"#),
            Self.entity(#"{"name": "9lives"}"#),
            Self.entity(#"{"name": "has-dash"}"#),
            Self.entity(#"{"name": "\#(String(repeating: "a", count: 65))"}"#),
            Self.entity(#"{"name": "Tributary_jobs"}"#),
            Self.entity(#"{"name": "SQLite_x"}"#),
            Self.entity(#"{"name": "A", "attributes": [{"name": "x", "type": "text"}]}"#),
            Self.entity(#"{"name": "A", "attributes": [{"name": "x"}]}"#),
            Self.entity(#"{"name": "A", "attributes": [{"name": "ID", "type": "int"}]}"#),
            Self.entity(#"{"name": "A", "attributes": [{"name": "_version", "type": "int"}]}"#),
            Self.entity(#"{"name": "A", "attributes": [{"name": "x", "type": "int", "optional": "yes"}]}"#),
            Self.entity(#"{"name": "A", "attributes": [{"name": "x", "type": "int"}], "uniqueness": [[]]}"#),
            Self.entity(
                #"{"name": "A", "relationships": [{"name": "b", "destination": "A", "deleteRule": "restrict"}]}"#),
            Self.entity(#"{"name": "A", "relationships": [{"name": "b", "destination": "A", "toMany": 1}]}"#),
            Self.entity(#"{"name": "A", "relationships": [{"name": "source", "destination": "A"}]}"#),
            Self.entity(#"{"name": "A", "relationships": [{"name": "b"}]}"#),
            Self.entity(#"{"name": "A", "attributes": [{"name": "x", "type": "int"}], "indexes": [[]]}"#),
            Self.entity(#"{"name": "A", "attributes": [{"name": "x", "type": "int"}], "indexes": [["x", "x"]]}"#),
            Self.entity(#"{"name": "A", "attributes": [{"name": "x", "type": "int"}], "indexes": ["x"]}"#),
        ]
        let verdicts = try await Self.schemaVerdicts(valid + invalid)
        for (document, verdict) in zip(valid, verdicts.prefix(valid.count)) {
            #expect(Self.loads(document), "the loader refuses \(document)")
            #expect(verdict == nil, "the schema refuses \(document): \(verdict ?? "")")
        }
        for (document, verdict) in zip(invalid, verdicts.suffix(invalid.count)) {
            #expect(!Self.loads(document), "the loader takes \(document)")
            #expect(verdict != nil, "the schema takes \(document)")
        }
    }

    @Test("what only the loader can judge, and the unknown keys only the schema flags, are as documented")
    func documentedDifferences() async throws {
        // The loader's checks across the model: a destination that is no entity, a constraint naming no
        // attribute, names equal ignoring case.
        let loaderOnly = [
            Self.entity(#"{"name": "A", "relationships": [{"name": "b", "destination": "Missing"}]}"#),
            Self.entity(#"{"name": "A", "attributes": [{"name": "x", "type": "int"}], "uniqueness": [["y"]]}"#),
            #"{"entities": [{"name": "User"}, {"name": "user"}]}"#,
            Self.entity(#"{"name": "A", "attributes": [{"name": "x", "type": "int"}], "indexes": [["y"]]}"#),
            Self.entity(
                #"{"name": "A", "relationships": [{"name": "b", "destination": "A", "toMany": true}], "indexes": [["b"]]}"#
            ),
            Self.entity(#"{"name": "A", "attributes": [{"name": "x", "type": "int"}], "indexes": [["x"], ["x"]]}"#),
        ]
        // Keys the loader ignores: usually typos.
        let schemaOnly = [
            Self.entity(#"{"name": "A", "attributes": [{"name": "x", "type": "int", "optinal": true}]}"#),
            Self.entity(#"{"name": "A", "relationships": [{"name": "b", "destination": "A", "optional": false}]}"#),
        ]
        let verdicts = try await Self.schemaVerdicts(loaderOnly + schemaOnly)
        for (document, verdict) in zip(loaderOnly, verdicts.prefix(loaderOnly.count)) {
            #expect(!Self.loads(document), "the loader takes \(document)")
            #expect(verdict == nil, "the schema refuses \(document): \(verdict ?? "")")
        }
        for (document, verdict) in zip(schemaOnly, verdicts.suffix(schemaOnly.count)) {
            #expect(Self.loads(document), "the loader refuses \(document)")
            #expect(verdict != nil, "the schema takes \(document)")
        }
    }
}
