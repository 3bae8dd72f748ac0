import Foundation
import Synchronization
import TributaryClient
import TributaryCore
import TributaryDemo

/// `tributary demo --failover` (docs/failover.md): etcd, three coordinators of a cluster (a primary and two
/// synchronous standbys), two worker processes and a subscriber naming every member; the demo import pushed, the
/// primary SIGKILLed halfway, the takeover shown, the import finished, and the checks a user would make: every row
/// once, the subscriber's seqs from 1 without a gap or a repeat, never told `FEED_REWRITTEN`.
public struct FailoverDemo: Sendable {
    public var rows = 100_000
    public var users = 2_000
    public var chunk = 1_000
    public var directory: URL?

    public init() {}

    /// What the demo saw, for its summary.
    public struct Summary: Sendable {
        /// The member SIGKILLed, and the one that took over.
        public var killed: String
        public var promoted: String
        /// From the SIGKILL to the new primary serving.
        public var takeover: Duration
        public var pullRequests: Int
        public var lastSeq: UInt64
        /// Whether the subscriber saw exactly seqs 1…``lastSeq``.
        public var seqsWithoutGap: Bool

        /// The lines the demo ends with.
        public var lines: [String] {
            [
                "demo: \(promoted) took over \(String(format: "%.1f", takeover.seconds)) s after \(killed) was killed",
                "demo: \(pullRequests) pull requests in the new primary's store; the subscriber saw seqs 1...\(lastSeq) "
                    + (seqsWithoutGap
                        ? "once each, without a gap, and was never told FEED_REWRITTEN" : "WITH A GAP OR A REPEAT"),
            ]
        }
    }

    /// Runs the demo; throws when a check fails or a process does not do its part in time.
    public func run() async throws -> Summary {
        let directory = try self.directory ?? Self.makeTemporaryDirectory()
        Terminal.error("demo: a cluster of 3 coordinators in \(directory.path)")
        let model = directory.appendingPathComponent("model.json")
        try Data(DemoData.modelJSON.utf8).write(to: model)
        let input = DemoData.pullRequests(count: rows, users: users)

        let ports = try LoopbackPorts.free(11)
        let etcd = try await EtcdProcess(
            address: "127.0.0.1", ports: (ports[0], ports[1]), directory: directory.appendingPathComponent("etcd"))
        defer { etcd.stop() }
        Terminal.error("demo: etcd at \(etcd.endpoint)")
        var members: [ClusterMemberProcess] = []
        var workers: [Process] = []
        defer {
            for worker in workers where worker.isRunning { worker.terminate() }
            for member in members { member.kill() }
        }
        let first = try ClusterMemberProcess(
            name: "a", cluster: "demo", etcd: etcd.endpoint, model: model, ports: Array(ports[2..<5]), in: directory)
        members.append(first)
        let elected = try await first.waitFor("primary")
        try await first.waitFor("ready")
        Terminal.error("demo: a is the primary (\(elected.split(separator: " ").last ?? ""))")
        for (index, name) in ["b", "c"].enumerated() {
            let base = 5 + index * 3
            members.append(
                try ClusterMemberProcess(
                    name: name, cluster: "demo", etcd: etcd.endpoint, model: model,
                    ports: Array(ports[base..<base + 3]), in: directory))
        }
        let listen = members.map(\.listen).joined(separator: ",")
        let feedEndpoints = members.map(\.feed).joined(separator: ",")
        let client = try JobClient(endpoint: listen)
        defer { Task { await client.close() } }
        try await waitUntil("b and c to be in sync", within: .seconds(60)) {
            let standbys = try await client.status().cluster?.standbys ?? []
            return standbys.filter(\.inSync).count == 2
        }
        Terminal.error("demo: b and c are synchronous standbys: a acknowledges each commit once both hold it")

        for index in 1...2 {
            let worker = Process()
            worker.executableURL = try Executables.sibling("tributary-worker")
            worker.arguments = ["--connect", listen, "--log-level", "warning"]
            let log = directory.appendingPathComponent("worker-\(index).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            worker.standardError = try FileHandle(forWritingTo: log)
            worker.standardOutput = FileHandle.nullDevice
            worker.standardInput = FileHandle.nullDevice
            try worker.run()
            workers.append(worker)
        }
        let subscriber = try Subscriber(feed: feedEndpoints, jobs: listen)
        defer { subscriber.stop() }
        Terminal.error("demo: 2 workers and a subscriber, each naming every member: \(listen)")

        let specs = NDJSONChunker.chunks(of: input, rowsPerJob: chunk).map {
            ImportJob.spec(entity: "PullRequest", payload: $0.payload, rows: $0.rows)
        }
        let batch = try await JobPusher(client: client).push(specs).batch
        var status = try await client.batchStatus(batch)
        let deadline = ContinuousClock.now + .seconds(600)
        while status.doneJobs * 2 < status.totalJobs {
            guard ContinuousClock.now < deadline else {
                throw DemoError("the import did not get halfway in 10 minutes")
            }
            Terminal.progress(Terminal.progressBar(done: status.doneRows, total: UInt64(rows), unit: "pull requests"))
            try await Task.sleep(for: .milliseconds(100))
            status = try await client.batchStatus(batch)
        }
        Terminal.endProgress(Terminal.progressBar(done: status.doneRows, total: UInt64(rows), unit: "pull requests"))
        first.kill()
        await first.exited()
        let killed = ContinuousClock.now
        Terminal.error("demo: SIGKILL to the primary a, halfway through the import")
        let promoted = try await withThrowingTaskGroup(of: ClusterMemberProcess.self) { group in
            for standby in members.dropFirst() {
                group.addTask {
                    try await standby.waitFor("ready")
                    return standby
                }
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw DemoError("no standby took over") }
            return first
        }
        let takeover = ContinuousClock.now - killed
        Terminal.error(
            "demo: \(promoted.name) is the primary \(String(format: "%.1f", takeover.seconds)) s later; the workers "
                + "and the subscriber follow it")

        while status.doneJobs + status.deadJobs < status.totalJobs {
            guard ContinuousClock.now < deadline else { throw DemoError("the import did not finish in 10 minutes") }
            Terminal.progress(Terminal.progressBar(done: status.doneRows, total: UInt64(rows), unit: "pull requests"))
            try await Task.sleep(for: .milliseconds(100))
            // The first requests may go out before the client found the new primary: they time out, and are asked again.
            if let now = try? await client.batchStatus(batch) { status = now }
        }
        Terminal.endProgress(Terminal.progressBar(done: status.doneRows, total: UInt64(rows), unit: "pull requests"))
        guard status.deadJobs == 0 else { throw DemoError("\(status.deadJobs) import jobs failed") }
        let lastSeq = try await client.status().lastSeq
        try await waitUntil("the subscriber to reach seq \(lastSeq)", within: .seconds(60)) {
            if let failure = subscriber.failure { throw DemoError("the subscriber stopped: \(failure)") }
            return subscriber.seqs.last.map { $0 >= lastSeq } ?? false
        }
        let pullRequests = try await client.count(of: "PullRequest")
        let seqs = subscriber.seqs
        for worker in workers { worker.terminate() }
        for member in members where member !== first { await member.stop() }
        let summary = Summary(
            killed: first.name, promoted: promoted.name, takeover: takeover, pullRequests: pullRequests,
            lastSeq: lastSeq, seqsWithoutGap: seqs == Array(1...max(1, lastSeq)))
        guard pullRequests == rows, summary.seqsWithoutGap else {
            throw DemoError(summary.lines.joined(separator: "; "))
        }
        return summary
    }

    /// Waits for `condition` (asked every 100 ms; an error counts as not yet, unless a `DemoError`).
    private func waitUntil(
        _ what: String, within timeout: Duration, _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                if try await condition() { return }
            } catch let error as DemoError {
                throw error
            } catch {}
            guard ContinuousClock.now < deadline else { throw DemoError("timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    private static func makeTemporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tributary-failover-demo-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A subscriber of the whole feed from seq 1, recording each didSave's seq.
    private final class Subscriber: Sendable {
        private let feed: ChangeFeed
        private let state = Seen()
        private let reader: Task<Void, Never>

        private final class Seen: Sendable {
            let value = Mutex((seqs: [UInt64](), failure: String?.none))
            func withLock<T: Sendable>(_ body: (inout (seqs: [UInt64], failure: String?)) -> T) -> T {
                value.withLock { body(&$0) }
            }
        }

        init(feed endpoints: String, jobs: String) throws {
            var options = ChangeFeed.Options()
            options.since = 0
            let feed = try ChangeFeed(feed: endpoints, jobs: jobs, options: options)
            self.feed = feed
            let state = state
            reader = Task {
                do {
                    for try await event in feed {
                        if case .didSave(let save) = event { state.withLock { $0.seqs.append(save.seq) } }
                    }
                    state.withLock { $0.failure = "the feed ended" }
                } catch {
                    state.withLock { $0.failure = "\(error)" }
                }
            }
        }

        var seqs: [UInt64] { state.withLock { $0.seqs } }
        var failure: String? { state.withLock { $0.failure } }

        func stop() {
            reader.cancel()
            let feed = feed
            Task { await feed.close() }
        }
    }
}

/// Why the failover demo failed.
struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
