import Foundation
import GRDB
import Testing

@testable import TributaryClient
@testable import TributaryCore

/// `tributary fetch` and `tributary count` run as a user runs them, against a real coordinator; what they print is
/// checked against the input and against the store read with a separate SQLite connection.
@Suite("Command line: fetch and count", .serialized)
struct FetchCommandTests {
    /// Every attribute type, a to-one and a to-many relationship.
    static let modelJSON = """
        {"entities": [
          {"name": "User", "attributes": [{"name": "login", "type": "string"},
             {"name": "avatar", "type": "data", "optional": true}, {"name": "key", "type": "uuid", "optional": true}],
           "uniqueness": [["login"]]},
          {"name": "PullRequest", "attributes": [{"name": "number", "type": "int"}, {"name": "title", "type": "string"},
             {"name": "state", "type": "string"}, {"name": "merged", "type": "bool"}, {"name": "additions", "type": "int"},
             {"name": "score", "type": "double", "optional": true}, {"name": "createdAt", "type": "date"}],
           "relationships": [{"name": "author", "destination": "User"},
                             {"name": "reviewers", "destination": "User", "toMany": true}],
           "uniqueness": [["number"]]}]}
        """

    static let logins = ["ada", "alan", "grace", "anita"]

    /// Only ada has an avatar and a key.
    static let users = """
        {"login": "ada", "avatar": "AAEC/w==", "key": "6F1C0E2A-9B3D-4C5E-8F70-112233445566"}
        {"login": "alan"}
        {"login": "grace"}
        {"login": "anita"}
        """

    /// A pull request as its import row gives it; `createdAt` as the fetch prints it back.
    struct PullRequest {
        let number: Int
        var title: String { number == 5 ? "Fix \"quotes\"\nand lines" : "PR \(number)" }
        var state: String { number % 3 == 0 ? "closed" : "open" }
        var merged: Bool { number % 2 == 0 }
        var additions: Int { [50, 120, 300, 220, 220, 90, 400, 150, 220, 101, 100, 260][number - 1] }
        var score: Double? { number % 4 == 0 ? nil : number == 2 ? 0.1 : Double(number) * 1.5 }
        var createdAt: String {
            number == 7 ? "2024-05-01T12:00:00.25Z" : "2024-05-\(number < 10 ? "0" : "")\(number)T08:30:00Z"
        }
        var author: String { FetchCommandTests.logins[number % 4] }
        var reviewers: [String] {
            number % 3 == 0
                ? [] : [FetchCommandTests.logins[(number + 1) % 4], FetchCommandTests.logins[(number + 2) % 4]]
        }

        /// The import row (its date with a trailing zero the fetch leaves out).
        var row: String {
            var fields: [String: Any] = [
                "number": number, "title": title, "state": state, "merged": merged, "additions": additions,
                "createdAt": number == 7 ? "2024-05-01T12:00:00.250Z" : createdAt, "author": ["login": author],
                "reviewers": reviewers.map { ["login": $0] },
            ]
            if let score { fields["score"] = score }
            return String(decoding: try! JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
        }
    }

    static let pullRequests = (1...12).map(PullRequest.init)

    /// A coordinator holding these users and pull requests, imported with `tributary push import --wait`; `body`
    /// gets it and its `--listen` and `--feed` options.
    static func withPullRequests(_ body: (TestCoordinator, [String]) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        let users = try directory.write("users.ndjson", FetchCommandTests.users)
        let rows = try directory.write(
            "prs.ndjson", FetchCommandTests.pullRequests.map(\.row).joined(separator: "\n"))
        let (_, exitStatus) = try await TestCoordinator.with(
            in: directory, workers: 1, modelJSON: FetchCommandTests.modelJSON
        ) { coordinator in
            let endpoints = [
                "--listen", coordinator.process.listenEndpoint, "--feed", coordinator.process.feedEndpoint,
            ]
            for (entity, file) in [("User", users), ("PullRequest", rows)] {
                let pushed = try await Binaries.run(
                    "tributary", ["push", "import", "--entity", entity, "--file", file, "--wait"] + endpoints)
                #expect(pushed.status == 0, "\(pushed.error)")
            }
            try await body(coordinator, endpoints)
        }
        #expect(exitStatus == 0)
    }

    /// The objects of a `--json` output, one per line.
    static func objects(_ output: String) throws -> [[String: Any]] {
        try output.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    /// The ids the store gives `sql`'s first column, as the CLI prints them.
    static func ids(_ database: DatabaseQueue, _ sql: String) async throws -> [String] {
        try await database.read { db in
            try Data.fetchAll(db, sql: sql).map { UUID(bytes: $0, at: $0.startIndex).uuidString.lowercased() }
        }
    }

    @Test("fetch selects, sorts and limits as the store does; --json lines carry every field; count agrees")
    func fetchAndCount() async throws {
        let directory = try TemporaryDirectory()
        let users = try directory.write("users.ndjson", Self.users)
        let rows = try directory.write("prs.ndjson", Self.pullRequests.map(\.row).joined(separator: "\n"))
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 1, modelJSON: Self.modelJSON) {
            coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            let feed = ["--feed", coordinator.process.feedEndpoint]
            for (entity, file) in [("User", users), ("PullRequest", rows)] {
                let pushed = try await Binaries.run(
                    "tributary", ["push", "import", "--entity", entity, "--file", file, "--wait"] + jobs + feed)
                #expect(pushed.status == 0, "\(pushed.error)")
            }
            let store = try DatabaseQueue(path: coordinator.storePath)
            let userIDs = try await store.read { db in
                try Row.fetchAll(db, sql: "SELECT login, id FROM User").reduce(into: [String: String]()) {
                    let id: Data = $1["id"]
                    $0[$1["login"]] = UUID(bytes: id, at: id.startIndex).uuidString.lowercased()
                }
            }
            let versions = try await store.read { db in
                try Row.fetchAll(db, sql: "SELECT number, _version FROM PullRequest").reduce(into: [Int: Int]()) {
                    $0[$1["number"]] = $1["_version"]
                }
            }

            // Predicate, sort (a tie on additions broken by number) and limit, in the store's order.
            let format = #"state == "open" AND additions > 100"#
            let fetched = try await Binaries.run(
                "tributary",
                [
                    "fetch", "--entity", "PullRequest", "--where", format, "--sort", "-additions,number", "--limit",
                    "4",
                    "--json",
                ] + jobs)
            #expect(fetched.status == 0, "\(fetched.error)")
            let objects = try Self.objects(fetched.output)
            let stored = try await Self.ids(
                store,
                "SELECT id FROM PullRequest WHERE state = 'open' AND additions > 100 ORDER BY additions DESC, number LIMIT 4"
            )
            #expect(objects.map { $0["id"] as? String } == stored)
            #expect(objects.compactMap { ($0["attributes"] as? [String: Any])?["number"] as? Int } == [7, 4, 5, 8])

            // Every field of every line, with the values the input gave.
            for (object, line) in zip(objects, fetched.output.split(separator: "\n")) {
                #expect(
                    Set(object.keys) == ["id", "entity", "version", "attributes", "relationships", "prefetched"])
                let attributes = try #require(object["attributes"] as? [String: Any])
                let number = try #require(attributes["number"] as? Int)
                let input = Self.pullRequests[number - 1]
                #expect(object["entity"] as? String == "PullRequest" && object["prefetched"] as? Bool == false)
                #expect(object["version"] as? Int == versions[number])
                #expect(
                    Set(attributes.keys) == ["number", "title", "state", "merged", "additions", "score", "createdAt"])
                #expect(attributes["title"] as? String == input.title && attributes["state"] as? String == input.state)
                #expect(line.contains("\"merged\":\(input.merged)"), "a JSON boolean: \(line)")
                #expect(attributes["additions"] as? Int == input.additions)
                #expect(attributes["createdAt"] as? String == input.createdAt)
                if let score = input.score {
                    #expect(attributes["score"] as? Double == score)
                } else {
                    #expect(attributes["score"] is NSNull)
                }
                let relationships = try #require(object["relationships"] as? [String: Any])
                #expect(relationships["author"] as? String == userIDs[input.author])
                #expect(
                    Set(relationships["reviewers"] as? [String] ?? ["missing"])
                        == Set(input.reviewers.map { userIDs[$0]! }))
            }

            // Data as base64, uuids in lowercase, NULL as null; a double, a fractional date and escapes as given.
            let people = try await Binaries.run(
                "tributary",
                ["fetch", "--entity", "User", "--where", #"login BEGINSWITH "a""#, "--sort", "login", "--json"] + jobs)
            let byLogin = try Self.objects(people.output).map { try #require($0["attributes"] as? [String: Any]) }
            #expect(byLogin.map { $0["login"] as? String } == ["ada", "alan", "anita"])
            #expect(byLogin[0]["avatar"] as? String == "AAEC/w==")
            #expect(byLogin[0]["key"] as? String == "6f1c0e2a-9b3d-4c5e-8f70-112233445566")
            #expect(byLogin[1]["avatar"] is NSNull && byLogin[1]["key"] is NSNull)
            let five = try await Binaries.run(
                "tributary", ["fetch", "--entity", "PullRequest", "--where", "number == 2 OR number == 5"] + jobs)
            let lines = five.output.split(separator: "\n").map(String.init)
            #expect(lines.count == 2)
            let two = try await Self.ids(store, "SELECT id FROM PullRequest WHERE number = 2")[0]
            #expect(
                lines[0].hasPrefix(
                    "PullRequest/\(two)  version \(versions[2]!)  number=2 title=\"PR 2\" state=\"open\" merged=true "
                        + "additions=120 score=0.1 createdAt=2024-05-02T08:30:00Z author=\(userIDs["grace"]!) reviewers=["
                ),
                "\(lines[0])")
            #expect(lines[1].contains(#"title="Fix \"quotes\"\nand lines""#), "\(lines[1])")

            // Prefetched destinations follow the objects, each once.
            let prefetched = try await Binaries.run(
                "tributary",
                [
                    "fetch", "--entity", "PullRequest", "--sort", "number", "--limit", "2", "--prefetch", "author",
                    "--prefetch", "reviewers", "--json",
                ] + jobs)
            #expect(prefetched.status == 0, "\(prefetched.error)")
            let withDestinations = try Self.objects(prefetched.output)
            #expect(withDestinations.map { $0["prefetched"] as? Bool } == [false, false, true, true, true, true])
            let destinations = withDestinations.dropFirst(2)
            #expect(destinations.allSatisfy { $0["entity"] as? String == "User" })
            let reached = Set(Self.pullRequests[0..<2].flatMap { [$0.author] + $0.reviewers }.map { userIDs[$0]! })
            #expect(Set(destinations.compactMap { $0["id"] as? String }) == reached)

            // count prints the number the store holds.
            let counted = try await Binaries.run(
                "tributary", ["count", "--entity", "PullRequest", "--where", format] + jobs)
            let storedCount = try await store.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest WHERE state = 'open' AND additions > 100")
            }
            #expect(counted.status == 0 && counted.output == "\(storedCount ?? -1)" && storedCount == 6, "\(counted)")
            let everyone = try await Binaries.run("tributary", ["count", "--entity", "User"] + jobs)
            #expect(everyone.output == "4")
        }
        #expect(exitStatus == 0)
    }

    @Test(
        "a predicate that does not parse is refused before anything is sent, with the parser's message and a caret",
        arguments: ["state == ", "additions >> 3", #"(state == "open""#, #"title == "unclosed"#])
    func badPredicate(format: String) async throws {
        let parserError = try #require(throws: FetchPredicateError.self) { try FetchPredicate(format: format) }
        for command in ["fetch", "count"] {
            // No coordinator listens there: the command must stop before connecting.
            let result = try await Binaries.run(
                "tributary",
                [command, "--entity", "PullRequest", "--where", format, "--listen", "tcp://127.0.0.1:1"],
                environment: [:])
            #expect(result.status != 0 && result.output.isEmpty)
            #expect(result.error.contains("--where: \(parserError.message)"), "\(result.error)")
            #expect(result.error.contains("  \(format)\n"), "\(result.error)")
            let offset = try #require(parserError.offset)
            #expect(result.error.contains("\n  " + String(repeating: " ", count: offset) + "^"), "\(result.error)")
        }
    }

    @Test(
        "bad --limit, --offset and --sort are refused, naming the flag",
        arguments: [
            (["--limit", "0"], "--limit must be between 1 and 100000"),
            (["--limit", "100001"], "--limit must be between 1 and 100000"),
            (["--offset=-1"], "--offset must not be negative"),
            (["--sort", "number,,title"], "'number,,title' has an empty or malformed key"),
            (["--sort", "-"], "'-' has an empty or malformed key"),
        ])
    func badFlags(flags: [String], message: String) async throws {
        let result = try await Binaries.run(
            "tributary", ["fetch", "--entity", "PullRequest"] + flags + ["--listen", "tcp://127.0.0.1:1"],
            environment: [:])
        #expect(result.status != 0)
        #expect(result.error.contains(message), "\(result.error)")
    }

    @Test("an unknown entity, key, sort key or prefetch path is refused by the coordinator, naming it")
    func unknownNames() async throws {
        let directory = try TemporaryDirectory()
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            for (arguments, message) in [
                (
                    ["fetch", "--entity", "Nope"],
                    "UNKNOWN_ENTITY: unknown entity 'Nope' (the model has User, PullRequest)"
                ),
                (["count", "--entity", "Nope"], "UNKNOWN_ENTITY: unknown entity 'Nope'"),
                (
                    ["fetch", "--entity", "PullRequest", "--where", "nope == 1"],
                    "INVALID_PREDICATE: fetch of 'PullRequest': entity 'PullRequest' has no attribute or to-one relationship named 'nope'"
                ),
                (
                    ["count", "--entity", "PullRequest", "--where", "author.nope == 1"],
                    "INVALID_PREDICATE: fetch of 'PullRequest': entity 'User' has no attribute or to-one relationship named 'nope'"
                ),
                (["fetch", "--entity", "PullRequest", "--sort", "-nope"], "INVALID_PREDICATE: fetch of 'PullRequest'"),
                (
                    ["fetch", "--entity", "PullRequest", "--prefetch", "title"],
                    "'PullRequest.title' is an attribute; only relationships can be prefetched"
                ),
            ] {
                let result = try await Binaries.run("tributary", arguments + jobs)
                #expect(result.status != 0 && result.output.isEmpty, "\(arguments)")
                #expect(result.error.contains(message), "\(arguments): \(result.error)")
            }
        }
        #expect(exitStatus == 0)
    }
}
