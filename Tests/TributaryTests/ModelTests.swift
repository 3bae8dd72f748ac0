import Foundation
import Testing

@testable import TributaryCore
@testable import TributaryDemo

@Suite("Model loader")
struct ModelTests {
    @Test("the issue's sample model loads with its entities, types, relationships and uniqueness")
    func loadsSampleModel() throws {
        let model = DemoData.model
        #expect(model.entities.map(\.name) == ["User", "PullRequest"])
        let pullRequest = try #require(model.entity(named: "PullRequest"))
        #expect(pullRequest.attribute(named: "score") == Attribute(name: "score", type: .double, isOptional: true))
        #expect(pullRequest.attribute(named: "createdAt")?.type == .date)
        #expect(
            pullRequest.relationship(named: "reviewers")
                == Relationship(name: "reviewers", destination: "User", isToMany: true))
        #expect(pullRequest.uniqueness == [["number"]])
    }

    @Test("every attribute type of the model file is accepted")
    func acceptsEveryType() throws {
        let attributes = AttributeType.allCases.map { "{\"name\": \"a_\($0.rawValue)\", \"type\": \"\($0.rawValue)\"}" }
        let json = "{\"entities\": [{\"name\": \"Thing\", \"attributes\": [\(attributes.joined(separator: ","))]}]}"
        let model = try Model.decode(Data(json.utf8))
        #expect(model.entities[0].attributes.map(\.type) == AttributeType.allCases)
    }

    @Test(
        "invalid model files are refused with a message naming the problem",
        arguments: [
            ("{\"entities\": []}", "no entities"),
            (
                "{\"entities\": [{\"name\": \"A\", \"attributes\": [{\"name\": \"x\", \"type\": \"strng\"}]}]}",
                "unknown type 'strng'"
            ),
            ("{\"entities\": [{\"name\": \"A\"}, {\"name\": \"A\"}]}", "declared twice"),
            (
                "{\"entities\": [{\"name\": \"A\", \"relationships\": [{\"name\": \"b\", \"destination\": \"B\"}]}]}",
                "unknown entity 'B'"
            ),
            (
                "{\"entities\": [{\"name\": \"A\", \"attributes\": [{\"name\": \"x\", \"type\": \"int\"}], \"uniqueness\": [[\"y\"]]}]}",
                "names 'y'"
            ),
            (
                "{\"entities\": [{\"name\": \"A\", \"attributes\": [{\"name\": \"id\", \"type\": \"int\"}]}]}",
                "reserves"
            ),
            ("{\"entities\": [{\"name\": \"drop table\", \"attributes\": []}]}", "not an identifier"),
            (
                "{\"entities\": [{\"name\": \"A\", \"relationships\": [{\"name\": \"b\", \"destination\": \"A\", \"toMany\": true}]}, {\"name\": \"A_b\"}]}",
                "the join table of 'A.b' would be named 'A_b', like entity 'A_b'"
            ),
            (
                "{\"entities\": [{\"name\": \"A\", \"relationships\": [{\"name\": \"b_c\", \"destination\": \"A\", \"toMany\": true}]}, {\"name\": \"A_b\", \"relationships\": [{\"name\": \"c\", \"destination\": \"A\", \"toMany\": true}]}]}",
                "the join tables of 'A.b_c' and 'A_b.c' would both be named 'A_b_c'"
            ),
            ("{\"entities\": [{\"attributes\": []}]}", "missing \"name\""),
            ("{\"entities\": [", "not valid JSON"),
        ])
    func refusesInvalidModels(json: String, expected: String) throws {
        let error = try #require(throws: ModelError.self) { try Model.decode(Data(json.utf8)) }
        #expect(error.message.contains(expected), "\(error.message)")
    }

    @Test("a missing model file is named in the error")
    func missingFile() throws {
        let error = try #require(throws: ModelError.self) {
            try Model.load(contentsOf: URL(fileURLWithPath: "/nonexistent/model.json"))
        }
        #expect(error.code == .unreadable)
        #expect(error.message.contains("/nonexistent/model.json"))
    }

    @Test("additive changes are accepted and conflicting ones refused, each named")
    func compatibility() throws {
        let stored = DemoData.model
        let added = try Model(entities: [
            Entity(
                name: "User",
                attributes: stored.entities[0].attributes + [Attribute(name: "email", type: .string, isOptional: true)],
                uniqueness: [["login"]]),
            stored.entities[1],
            Entity(name: "Label", attributes: [Attribute(name: "text", type: .string)]),
        ])
        let additions = try added.additions(over: stored)
        #expect(additions.entities.map(\.name) == ["Label"])
        #expect(additions.attributes.map(\.1.name) == ["email"])

        let changed = try Model(entities: [
            Entity(name: "User", attributes: [Attribute(name: "login", type: .int)], uniqueness: [["login"]])
        ])
        let error = try #require(throws: ModelError.self) { try changed.additions(over: stored) }
        #expect(error.code == .incompatible)
        #expect(error.message.contains("'User.login' changed type from string to int"))
        #expect(error.message.contains("entity 'PullRequest' was removed"))
    }

    @Test("object ids are time-ordered: each new id sorts after the previous one")
    func timeOrderedIDs() {
        var previous = ObjectID.make(entity: "User").uuid.bytes
        for _ in 0..<10_000 {
            let next = ObjectID.make(entity: "User").uuid.bytes
            #expect(previous.lexicographicallyPrecedes(next))
            previous = next
        }
    }
}
