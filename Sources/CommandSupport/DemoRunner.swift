import Foundation
import Synchronization
import TributaryClient
import TributaryCore
import TributaryDemo

/// `tributary demo`: a coordinator on a temporary store with two real worker processes, a generated import of
/// pull requests with overlapping authors and reviewers, the change feed followed with a progress bar, and a
/// summary; the coordinator's dashboard is up while it runs (and after it, with ``keep``).
public struct DemoRunner: Sendable {
    /// What the demo did, for its summary line.
    public struct Summary: Sendable {
        public var rowsCommitted: Int
        public var elapsed: Duration
        public var eventsSeen: Int
        public var users: Int
        public var storePath: String

        public var rowsPerSecond: Double {
            elapsed.seconds > 0 ? Double(rowsCommitted) / elapsed.seconds : 0
        }

        public var line: String {
            return "demo: \(rowsCommitted) rows committed in \(String(format: "%.2f", elapsed.seconds)) s "
                + "(\(Int(rowsPerSecond)) rows/s), \(eventsSeen) didSave events seen, \(users) users, store \(storePath)"
        }
    }

    public var rows = 100_000
    public var users = 2_000
    public var workers = 2
    public var chunk = 1_000
    public var directory: URL?
    /// Leave the coordinator running after the demo (its dashboard and store, to look around).
    public var keep = false
    /// The coordinator's `--http` endpoint (a free loopback port by default).
    public var http = "127.0.0.1:*"

    public init() {}

    public func run() async throws -> Summary {
        let directory = try self.directory ?? Self.makeTemporaryDirectory()
        Terminal.error("demo: generating \(rows) pull requests by \(users) users in \(directory.path)")
        let rowsData = DemoData.pullRequests(count: rows, users: users)
        try rowsData.write(to: directory.appendingPathComponent("pull-requests.ndjson"))

        let started = try await CoordinatorProcess.startDemoStore(
            in: directory, arguments: ["--workers", String(workers), "--http", http])
        let coordinator = started.process
        let storePath = started.storePath
        let logPath = started.logPath
        Terminal.error(
            "demo: coordinator \(coordinator.listenEndpoint), feed \(coordinator.feedEndpoint), \(workers) workers (log: \(logPath))"
        )
        if let url = coordinator.httpURL {
            Terminal.error(
                "demo: dashboard \(url) (\(keep ? "kept after the demo" : "up while the demo runs; --keep to keep it"))"
            )
        }
        do {
            let summary = try await importAndFollow(rowsData, coordinator: coordinator, storePath: storePath)
            if keep {
                Terminal.error(
                    "demo: the coordinator keeps running (pid \(coordinator.pid)): dashboard \(coordinator.httpURL ?? "off"), "
                        + "jobs \(coordinator.listenEndpoint), feed \(coordinator.feedEndpoint); stop it with: kill \(coordinator.pid)"
                )
                return summary
            }
            let status = await coordinator.stop()
            guard status == 0 else {
                throw CoordinatorStartError(message: "the coordinator exited with status \(status); see \(logPath)")
            }
            return summary
        } catch {
            await coordinator.stop()
            throw error
        }
    }

    private func importAndFollow(_ rowsData: Data, coordinator: CoordinatorProcess, storePath: String) async throws
        -> Summary
    {
        let client = try JobClient(endpoint: coordinator.listenEndpoint)
        // Following from the store's position before the push, the feed cannot miss an event of the import,
        // however late its subscription takes effect: what the live stream lacks comes from history.
        var options = ChangeFeed.Options()
        options.since = try await client.status().lastSeq
        let feed = try ChangeFeed(feed: coordinator.feedEndpoint, jobs: coordinator.listenEndpoint, options: options)
        let started = ContinuousClock.now
        let chunks = NDJSONChunker.chunks(of: rowsData, rowsPerJob: chunk)
        let specs = chunks.map { ImportJob.spec(entity: "PullRequest", payload: $0.payload, rows: $0.rows) }
        let pushed = try await JobPusher(client: client).push(specs)

        // The feed is read by its own task, so a stalled feed can never hang the demo's loop below.
        let seen = FeedTally()
        let reader = Task {
            for try await event in feed {
                if case .didSave(let save) = event { seen.add(save) }
            }
        }
        defer { reader.cancel() }
        var finishedAt: ContinuousClock.Instant?
        while true {
            let (pullRequests, lastSeq) = seen.snapshot
            Terminal.progress(
                Terminal.progressBar(done: UInt64(pullRequests), total: UInt64(rows), unit: "pull requests"))
            let status = try await client.batchStatus(pushed.batch)
            if status.deadJobs > 0 {
                Terminal.endProgress("")
                let first = status.dead.first.map { "job \($0.id): \($0.message)" } ?? ""
                throw CoordinatorStartError(message: "\(status.deadJobs) import jobs failed; \(first)")
            }
            if status.doneJobs == status.totalJobs {
                finishedAt = finishedAt ?? .now
                // Every job is durable; wait (boundedly) for the feed to show the last commit.
                let storeSeq = try await client.status().lastSeq
                if lastSeq >= storeSeq || ContinuousClock.now - finishedAt! > .seconds(10) {
                    Terminal.endProgress(
                        Terminal.progressBar(done: UInt64(pullRequests), total: UInt64(rows), unit: "pull requests"))
                    break
                }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let events = seen.events
        let elapsed = ContinuousClock.now - started
        let (pullRequests, users) = (try await client.count(of: "PullRequest"), try await client.count(of: "User"))
        await client.close()
        await feed.close()
        return Summary(
            rowsCommitted: pullRequests, elapsed: elapsed, eventsSeen: events, users: users, storePath: storePath)
    }

    private static func makeTemporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tributary-demo-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// What the demo has seen on the feed, updated by the feed's reader task.
final class FeedTally: Sendable {
    private struct State {
        var pullRequests = Set<UUID>()
        var lastSeq: UInt64 = 0
        var events = 0
    }

    private let state = Mutex(State())

    func add(_ save: DidSave) {
        state.withLock { state in
            state.events += 1
            state.lastSeq = max(state.lastSeq, save.seq)
            for id in save.inserted + save.updated where id.entity == "PullRequest" {
                state.pullRequests.insert(id.uuid)
            }
        }
    }

    var snapshot: (pullRequests: Int, lastSeq: UInt64) { state.withLock { ($0.pullRequests.count, $0.lastSeq) } }
    var events: Int { state.withLock { $0.events } }
}
