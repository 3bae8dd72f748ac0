import Foundation
import GRDB
import Testing
import TributaryCommandSupport

@testable import TributaryClient
@testable import TributaryDemo

/// The dashboard in a real browser: Debian's chromium, headless, driven by selenium (Tests/browser/dashboard_check.py;
/// `make test` installs both) against a real coordinator and workers; the store checked with its own connection.
@Suite("Dashboard: a real browser watches an import and retries a dead job")
struct DashboardBrowserTests {
    /// The demo model with a user's name required: a pull request naming a user by login alone refers to a stored
    /// user, and dies when there is none.
    static let model = DemoData.modelJSON.replacingOccurrences(
        of: #"{"name": "name", "type": "string", "optional": true}"#, with: #"{"name": "name", "type": "string"}"#)

    @Test(
        "the counters change during an import; Retry on a dead job runs it again, and it is done; Resume on a paused queue resumes it"
    )
    func watchAndRetry() async throws {
        try #require(Self.model != DemoData.modelJSON, "the demo model changed: this test's model no longer differs")
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 2, modelJSON: Self.model)
        defer { Task { await coordinator.process.stop() } }
        let url = try #require(coordinator.process.httpURL)
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }

        // A pull request by a user nobody imported yet: its job dies.
        let orphan =
            #"{"number": 1, "title": "t", "merged": false, "additions": 1, "createdAt": "2026-01-01T00:00:00Z", "author": {"login": "ghost"}}"#
        let dead = try await client.finish(
            try await client.pushImport(Data((orphan + "\n").utf8), rowsPerJob: 10).batch)
        let deadJob = try #require(dead.dead.first?.id, "the orphan pull request's job did not die: \(dead)")
        // The user, imported now: a retry can succeed.
        _ = try await client.finish(
            try await client.pushImport(
                Data(#"{"login": "ghost", "name": "Ghost"}"#.utf8 + [10]), entity: "User", rowsPerJob: 10
            )
            .batch)

        // A queue paused with no jobs: listed as paused, for the page to resume.
        #expect(try await client.queue("reports", action: .pause).paused)

        let check = try StartedProcess.start(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", "-u", Repository.root.appendingPathComponent("Tests/browser/dashboard_check.py").path,
                "--url", url, "--dead-job", String(deadJob), "--paused-queue", "reports", "--screenshot",
                directory.path("dashboard.png"),
            ])
        defer { check.kill() }
        // Once the page shows its first count, an import starts for it to watch.
        _ = try await check.waitForOutput(timeout: .seconds(90)) { $0.contains("waiting for it to change") }
        let users = (0..<20_000).map { #"{"login": "user\#($0)", "name": "User \#($0)"}"# }
        let imported = try await client.pushImport(
            Data((users.joined(separator: "\n") + "\n").utf8), entity: "User", rowsPerJob: 500)

        let (status, output, error) = try await check.finish(timeout: .seconds(180))
        #expect(
            status == 0,
            "the browser check failed:\n\(output.joined(separator: "\n"))\n\(error.joined(separator: "\n"))")
        #expect(output.contains { $0.contains("-> ") && $0.contains("rows committed") }, "\(output)")
        #expect(output.contains { $0.contains("clicked Retry on job \(deadJob)") }, "\(output)")
        #expect(output.contains { $0.contains("clicked Resume on queue reports") }, "\(output)")
        #expect(try await client.status().queues.allSatisfy { !$0.paused }, "the queue resumed from the page is not")
        _ = try await client.finish(imported.batch)

        let database = try DatabaseQueue(path: coordinator.storePath)
        let (state, author) = try await database.read { db in
            (
                try String.fetchOne(db, sql: "SELECT state FROM tributary_jobs WHERE id = ?", arguments: [deadJob]),
                try String.fetchOne(
                    db, sql: "SELECT u.login FROM PullRequest p JOIN User u ON u.rowid = p.author WHERE p.number = 1")
            )
        }
        #expect(state == "done", "the retried job is \(state ?? "missing") in the store")
        #expect(author == "ghost", "the retried job's pull request is not in the store with its author")
    }
}
