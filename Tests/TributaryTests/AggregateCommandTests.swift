import Foundation
import GRDB
import Testing

@testable import TributaryCore

/// `tributary fetch` and `tributary count` with `--group-by`, `--sum`, `--avg`, `--min`, `--max` and `--having`, run
/// as a user runs them against a real coordinator; the rows they print are checked against the same query written by
/// hand on a separate connection to the store.
@Suite("Command line: aggregate fetches", .serialized)
struct AggregateCommandTests {
    /// The JSON objects of a `--json` output, one per line.
    static func rows(_ output: String) throws -> [[String: Any]] {
        try FetchCommandTests.objects(output)
    }

    /// A uuid stored as 16 bytes, as the CLI prints it.
    static func uuid(_ bytes: Data?) -> Any {
        bytes.map { UUID(bytes: $0, at: $0.startIndex).uuidString.lowercased() } ?? NSNull()
    }

    /// A row of the hand-written query, as the test compares it.
    struct Stored: Sendable {
        let state: String
        let merged: Bool
        let sum: Int
        let avg: Double?
        let max: Int
        let maxScore: Double?
    }

    @Test("groups, sums, averages, minimums, maximums, having, sorts and limits print the store's rows")
    func rowsAgainstSQL() async throws {
        try await FetchCommandTests.withPullRequests { coordinator, both in
            let endpoints = Array(both.prefix(2))
            let store = try DatabaseQueue(path: coordinator.storePath)
            let login = "(SELECT u.login FROM User u WHERE u._rowid = p.author)"

            // count by a to-one key path: the group keys ascending, a count per group.
            let perAuthor = try await Binaries.run(
                "tributary", ["count", "--entity", "PullRequest", "--group-by", "author.login", "--json"] + endpoints)
            #expect(perAuthor.status == 0, "\(perAuthor.error)")
            let expectedPerAuthor = try await store.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT \(login) AS k, COUNT(*) AS n FROM PullRequest p GROUP BY k ORDER BY k"
                ).map { "\($0["k"] as String):\($0["n"] as Int)" }
            }
            let printedPerAuthor = try Self.rows(perAuthor.output)
            #expect(printedPerAuthor.allSatisfy { Set($0.keys) == ["author.login", "count"] })
            #expect(
                printedPerAuthor.map { "\($0["author.login"] as? String ?? "?"):\($0["count"] as? Int ?? -1)" }
                    == expectedPerAuthor)
            #expect(expectedPerAuthor.count == 4)

            // Every function, with a predicate, having, a descending sort and a limit, each of its type.
            let grouped = try await Binaries.run(
                "tributary",
                [
                    "fetch", "--entity", "PullRequest", "--where", "additions >= 90", "--group-by", "state,merged",
                    "--sum", "additions", "--avg", "score", "--min", "createdAt", "--max", "additions,score",
                    "--having", "sum_additions > 200", "--sort", "-sum_additions", "--limit", "2", "--json",
                ] + endpoints)
            #expect(grouped.status == 0, "\(grouped.error)")
            let printed = try Self.rows(grouped.output)
            let expected = try await store.read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT state, merged, COALESCE(SUM(additions), 0) AS s, AVG(score) AS a, MAX(additions) AS m,
                          MAX(score) AS ms FROM PullRequest WHERE additions >= 90 GROUP BY state, merged
                        HAVING s > 200 ORDER BY s DESC, state, merged LIMIT 2
                        """
                ).map {
                    Stored(
                        state: $0["state"], merged: $0["merged"], sum: $0["s"], avg: $0["a"], max: $0["m"],
                        maxScore: $0["ms"])
                }
            }
            #expect(printed.count == 2 && expected.count == 2)
            for (row, stored) in zip(printed, expected) {
                #expect(
                    Set(row.keys)
                        == [
                            "state", "merged", "sum_additions", "avg_score", "min_createdAt", "max_additions",
                            "max_score",
                        ])
                #expect(row["state"] as? String == stored.state)
                #expect(row["merged"] as? Bool == stored.merged)
                #expect(row["sum_additions"] as? Int == stored.sum)
                #expect(row["max_additions"] as? Int == stored.max)
                #expect(row["avg_score"] as? Double == stored.avg || (row["avg_score"] is NSNull && stored.avg == nil))
                #expect(
                    row["max_score"] as? Double == stored.maxScore
                        || (row["max_score"] is NSNull && stored.maxScore == nil))
                // A minimum of dates is a date, printed as the import gave it.
                let members = FetchCommandTests.pullRequests.filter {
                    $0.additions >= 90 && $0.state == row["state"] as? String && $0.merged == row["merged"] as? Bool
                }
                let earliest = members.map(\.createdAt).min()
                #expect(row["min_createdAt"] as? String == earliest, "\(row)")
            }

            // Lines into a pipe; a to-one relationship groups by its destination's id; count adds its count to the
            // functions asked for.
            let byAuthor = try await Binaries.run(
                "tributary",
                [
                    "count", "--entity", "PullRequest", "--where", "additions > 100", "--group-by", "author", "--max",
                    "additions", "--having", "count >= 3",
                ]
                    + endpoints)
            #expect(byAuthor.status == 0, "\(byAuthor.error)")
            let expectedLines = try await store.read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT (SELECT u.id FROM User u WHERE u._rowid = p.author) AS k, COUNT(*) AS n,
                          MAX(additions) AS m FROM PullRequest p WHERE additions > 100 GROUP BY p.author HAVING n >= 3
                          ORDER BY k
                        """
                ).map { "author=\(Self.uuid($0["k"])) count=\($0["n"] as Int) max_additions=\($0["m"] as Int)" }
            }
            #expect(byAuthor.output.split(separator: "\n").map(String.init) == expectedLines)
            #expect(expectedLines.count == 1, "only ada's group has 3 pull requests of over 100 additions")

            // A table: the names as headers, numbers aligned right.
            let table = try await Binaries.run(
                "tributary",
                ["count", "--entity", "PullRequest", "--group-by", "state", "--format", "table"] + endpoints,
                environment: ["COLUMNS": "80"])
            #expect(table.status == 0, "\(table.error)")
            let counts = try await store.read { db in
                try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM PullRequest GROUP BY state ORDER BY state")
                    .map { ($0["state"] as String, $0["n"] as Int) }
            }
            #expect(
                table.output.split(separator: "\n").map(String.init)
                    == ["state   count", "------  -----"]
                    + counts.map { state, count in
                        state.padding(toLength: 6, withPad: " ", startingAt: 0) + "  "
                            + String(repeating: " ", count: 5 - String(count).count) + String(count)
                    })

            // Without --group-by: one row over every match; count --json without groups.
            let totals = try await Binaries.run(
                "tributary",
                [
                    "fetch", "--entity", "PullRequest", "--where", "number > 100", "--sum", "additions",
                    "--avg", "additions", "--json",
                ] + endpoints)
            #expect(
                try Self.rows(totals.output).map { $0 as NSDictionary } == [
                    ["sum_additions": 0, "avg_additions": NSNull()]
                ])
            let plain = try await Binaries.run("tributary", ["count", "--entity", "PullRequest", "--json"] + endpoints)
            #expect(plain.output == #"{"count":12}"#)
        }
    }

    @Test("a key the model cannot aggregate is refused before the aggregate is sent, naming it")
    func refusedByModel() async throws {
        try await FetchCommandTests.withPullRequests { _, both in
            let endpoints = Array(both.prefix(2))
            for (arguments, fragment) in [
                (["--sum", "title"], "'title'"),
                (["--group-by", "nope"], "'nope'"),
                (["--avg", "reviewers"], "reviewers"),
                (["--group-by", "reviewers.login"], "to-many"),
                (["--group-by", "state", "--having", "state == 'open'"], "names no aggregate"),
                (["--group-by", "state", "--sort", "additions"], "'additions'"),
            ] {
                let result = try await Binaries.run(
                    "tributary", ["fetch", "--entity", "PullRequest"] + arguments + endpoints)
                #expect(result.status != 0 && result.output.isEmpty, "\(arguments)")
                #expect(result.error.contains(fragment), "\(arguments): \(result.error)")
            }
        }
    }

    @Test(
        "malformed aggregate flags are refused before connecting, naming the flag",
        arguments: [
            (["fetch", "--group-by", "state,,merged"], "--group-by takes comma-separated keys"),
            (["count", "--sum", " "], "--sum takes comma-separated keys"),
            (["fetch", "--group-by", "state", "--having", "count >"], "--having: "),
            (["fetch", "--group-by", "state", "--prefetch", "author"], "--prefetch and --columns apply to objects"),
            (["fetch", "--sum", "additions", "--columns", "state"], "--prefetch and --columns apply to objects"),
            (["count", "--format", "lines"], "--format prints groups"),
        ])
    func badFlags(arguments: [String], message: String) async throws {
        let result = try await Binaries.run(
            "tributary", arguments + ["--entity", "PullRequest", "--listen", "tcp://127.0.0.1:1"], environment: [:])
        #expect(result.status != 0 && result.output.isEmpty)
        #expect(result.error.contains(message), "\(result.error)")
    }
}
