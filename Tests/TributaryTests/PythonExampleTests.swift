import Foundation
import GRDB
import Testing
import TributaryCommandSupport

@testable import TributaryClient
@testable import TributaryDemo

/// The Python example client (examples/python: pyzmq and classes generated from the project's .proto) against a
/// real coordinator. `make test` installs its packages and generates the classes first (`make python-example`).
@Suite("Python example: pusher and subscriber against a real coordinator")
struct PythonExampleTests {
    static let example = Repository.root.appendingPathComponent("examples/python")

    /// Starts `script` with `arguments`; its standard output and error are collected until it exits.
    static func start(_ script: String, _ arguments: [String]) throws -> StartedProcess {
        try StartedProcess.start(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", example.appendingPathComponent(script).path] + arguments)
    }

    /// Waits (bounded) for `process` to exit and returns its status and output lines.
    static func finish(_ started: StartedProcess, timeout: Duration = .seconds(60)) async throws
        -> (status: Int32, output: [String], error: [String])
    {
        try await started.finish(timeout: timeout)
    }

    @Test("the pusher imports NDJSON; a live and a resuming subscriber print every commit once, in order")
    func pusherAndSubscribers() async throws {
        let generated = Self.example.appendingPathComponent("generated/tributary_pb2.py").path
        try #require(
            FileManager.default.fileExists(atPath: generated),
            "examples/python/generated is missing: run `make python-example` (part of `make test`)")
        let directory = try TemporaryDirectory()
        let rows = try directory.write("rows.ndjson", DemoData.pullRequests(count: 2_000, users: 50))
        let coordinator = try await TestCoordinator.start(in: directory, workers: 2)
        defer { Task { await coordinator.process.stop() } }
        let endpoints = ["--listen", coordinator.process.listenEndpoint, "--feed", coordinator.process.feedEndpoint]
        // 10 jobs of 200 rows, one save each (the import saves every 1,000 rows): commits 1 to 10.
        let live = try Self.start("subscriber.py", endpoints + ["--until-seq", "10"])
        // Live from the store's position: wait until it says so, or the first commits could come before it.
        // (The stream goes on where this loop stops: `finish` reads the rest.)
        _ = try await live.waitForError(containing: "caught up at seq")

        let pushed = try await Self.finish(
            try Self.start(
                "pusher.py",
                [
                    "--listen", coordinator.process.listenEndpoint, "--entity", "PullRequest", "--file", rows,
                    "--chunk", "200", "--wait",
                ]))
        #expect(pushed.status == 0, "pusher: \(pushed.error.joined(separator: "\n"))")
        #expect(pushed.output.contains { $0.contains("pushed 10 jobs") })
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        #expect(try await client.status().lastSeq == 10)
        await client.close()

        let resumed = try await Self.finish(
            try Self.start("subscriber.py", endpoints + ["--since", "0", "--until-seq", "10"]))
        let followed = try await Self.finish(live)
        for run in [resumed, followed] {
            #expect(run.status == 0, "subscriber: \(run.error.joined(separator: "\n"))")
            let commits = try run.output.map { line in
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            }
            #expect(commits.compactMap { $0["seq"] as? Int } == Array(1...10))
            let inserted = commits.compactMap { commit -> Int? in
                ((commit["entities"] as? [String: Any])?["PullRequest"] as? [String: Any])?["inserted"] as? Int
            }
            #expect(inserted.reduce(0, +) == 2_000)
        }

        let refused = try await Self.finish(
            try Self.start(
                "pusher.py",
                ["--listen", coordinator.process.listenEndpoint, "--entity", "Nope", "--file", rows]))
        #expect(refused.status == 1 && refused.error.joined().contains("UNKNOWN_ENTITY"))
    }

    @Test("the pusher pushes jobs that wait for a batch, with a batch callback, and adds a schedule")
    func pusherDependenciesAndSchedules() async throws {
        let directory = try TemporaryDirectory()
        let first = try directory.write("first.ndjson", DemoData.pullRequests(count: 1_000, users: 50))
        let second = try directory.write(
            "second.ndjson", DemoData.pullRequests(count: 1_000, users: 50, startingAt: 1_001))
        let coordinator = try await TestCoordinator.start(in: directory, workers: 2)
        defer { Task { await coordinator.process.stop() } }
        let listen = ["--listen", coordinator.process.listenEndpoint]
        let pushed = try await Self.finish(
            try Self.start("pusher.py", listen + ["--entity", "PullRequest", "--file", first, "--chunk", "250"]))
        #expect(pushed.status == 0, "pusher: \(pushed.error.joined(separator: "\n"))")
        let batch = try #require(
            pushed.output.first?.split(separator: " ").drop { $0 != "batch" }.dropFirst().first.map(String.init))
        let after = try await Self.finish(
            try Self.start(
                "pusher.py",
                listen + [
                    "--entity", "PullRequest", "--file", second, "--chunk", "250", "--after-batch", batch,
                    "--on-complete", "noop", "--argument", "customer=acme", "--wait",
                ]))
        #expect(after.status == 0, "pusher: \(after.error.joined(separator: "\n"))")
        let secondBatch = try #require(
            after.output.first?.split(separator: " ").drop { $0 != "batch" }.dropFirst().first.map(String.init))
        try await DatabaseQueue(path: coordinator.storePath).read { db in
            let firstDone =
                try Double.fetchOne(
                    db, sql: "SELECT MAX(updated_at) FROM tributary_jobs WHERE batch = ?", arguments: [batch])
                ?? .infinity
            let secondStart =
                try Double.fetchOne(
                    db, sql: "SELECT MIN(leased_at) FROM tributary_jobs WHERE batch = ?", arguments: [secondBatch]) ?? 0
            #expect(secondStart >= firstDone, "a job ran before the batch it waits for was done")
            #expect(
                try String.fetchAll(
                    db, sql: "SELECT arguments FROM tributary_jobs WHERE batch = ?", arguments: [secondBatch]
                )
                .allSatisfy { $0.contains(#""customer":"acme""#) })
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest") == 2_000)
        }
        try await waitUntil("the batch callback to be done") {
            try await DatabaseQueue(path: coordinator.storePath).read { db in
                try String.fetchAll(
                    db, sql: "SELECT state FROM tributary_jobs WHERE batch = ?", arguments: ["\(secondBatch)/complete"])
            } == ["done"]
        }
        let scheduled = try await Self.finish(
            try Self.start(
                "pusher.py",
                listen + [
                    "--schedule", "nightly", "--cron", "0 3 * * *", "--kind", "noop", "--timezone", "Europe/Paris",
                ]))
        #expect(scheduled.status == 0, "pusher: \(scheduled.error.joined(separator: "\n"))")
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let schedules = try await client.schedules()
        await client.close()
        #expect(schedules.map(\.spec.name) == ["nightly"] && schedules.first?.spec.timeZone == "Europe/Paris")
        let bad = try await Self.finish(
            try Self.start("pusher.py", listen + ["--schedule", "x", "--cron", "* * *", "--kind", "noop"]))
        #expect(bad.status == 1 && bad.error.joined().contains("has 3 fields"), "\(bad.error)")
    }

    @Test(
        "the Python worker (written from docs/protocol.md) imports beside a Swift worker, drains, and survives kill -9")
    func pythonWorker() async throws {
        let generated = Self.example.appendingPathComponent("generated/tributary_pb2.py").path
        try #require(
            FileManager.default.fileExists(atPath: generated),
            "examples/python/generated is missing: run `make python-example` (part of `make test`)")
        let directory = try TemporaryDirectory()
        // test_worker.py starts the coordinator, worker.py and a Swift worker itself, checks the store with its own
        // connection, and says PASS or which check failed.
        let check = try Self.start(
            "test_worker.py",
            [Binaries.url("tributary-coordinator").path, Binaries.url("tributary-worker").path, directory.path("run")])
        let (status, output, error) = try await Self.finish(check, timeout: .seconds(180))
        #expect(status == 0, "\(output.joined(separator: "\n"))\n\(error.joined(separator: "\n"))")
        #expect(output.contains { $0.contains("PASS") } || error.contains { $0.contains("PASS") }, "\(output)")
    }

    @Test("aggregate.py reads groups through the wire: the rows the same query written by hand in SQL gives")
    func aggregate() async throws {
        let directory = try TemporaryDirectory()
        let rows = try directory.write("rows.ndjson", DemoData.pullRequests(count: 2_000, users: 50))
        let coordinator = try await TestCoordinator.start(in: directory, workers: 2)
        defer { Task { await coordinator.process.stop() } }
        let listen = ["--listen", coordinator.process.listenEndpoint]
        let pushed = try await Self.finish(
            try Self.start("pusher.py", listen + ["--entity", "PullRequest", "--file", rows, "--wait"]))
        #expect(pushed.status == 0, "pusher: \(pushed.error.joined(separator: "\n"))")

        let read = try await Self.finish(
            try Self.start(
                "aggregate.py",
                listen + [
                    "--entity", "PullRequest", "--group-by", "author.login", "--count", "--sum", "additions",
                    "--max", "createdAt", "--where", "merged == false AND additions >= 10", "--having",
                    "count >= 15", "--sort=-sum_additions", "--limit", "5",
                ]))
        #expect(read.status == 0, "aggregate.py: \(read.error.joined(separator: "\n"))")
        let printed = try read.output.map { line in
            let row = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(Set(row.keys) == ["author.login", "count", "sum_additions", "max_createdAt"])
            return "\(row["author.login"] ?? "?") \(row["count"] ?? "?") \(row["sum_additions"] ?? "?") "
                + "\(row["max_createdAt"] ?? "?")"
        }
        let expected = try await DatabaseQueue(path: coordinator.storePath).read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT (SELECT u.login FROM User u WHERE u._rowid = p.author) AS k, COUNT(*) AS n,
                      COALESCE(SUM(additions), 0) AS s, MAX(createdAt) AS m
                    FROM PullRequest p WHERE merged = 0 AND additions >= 10 GROUP BY k HAVING n >= 15
                    ORDER BY s DESC, k LIMIT 5
                    """
            ).map { "\($0["k"] as String) \($0["n"] as Int) \($0["s"] as Int) \($0["m"] as Double)" }
        }
        #expect(printed == expected)
        #expect(expected.count == 5, "the having and limit leave five groups")

        let refused = try await Self.finish(
            try Self.start("aggregate.py", listen + ["--entity", "PullRequest", "--sum", "title"]))
        #expect(refused.status == 1 && refused.error.joined().contains("INVALID_PREDICATE"), "\(refused.error)")
    }
}
