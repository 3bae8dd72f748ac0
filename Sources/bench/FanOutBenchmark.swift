import Foundation
import GRDB
import Synchronization
import TributaryCommandSupport
import TributaryCore
import TributaryDemo
import TributaryTestSupport

/// The fan-out figures (docs/scale-out.md): subscriber processes (`tributary subscribe --latency`) on two hosts,
/// network namespaces B and C, following an import on host A: straight from the coordinator, or through a
/// `tributary relay` on each subscriber host. Needs root (the namespaces).
struct FanOutBenchmark {
    let subscribers: Int
    let rows: Int
    let directory: URL

    /// What one run saw.
    struct Outcome {
        var commits: Int
        var events: Int
        /// From the push to the last subscriber's last event.
        var seconds: Double
        var medianP50: Double
        var medianP99: Double
        var worstP99: Double
        var coordinatorCPUSeconds: Double
        var coordinatorPeakBytes: Double
        var importRowsPerSecond: Double

        var eventsPerSecond: Double { Double(events) / max(seconds, 1e-9) }
    }

    /// A process started with its output followed: the last `seq N` line of a subscriber, and its error lines.
    final class Followed: Sendable {
        let process: Process
        let lastSeq = Mutex(0)
        let errors = Mutex<[String]>([])

        init(_ executable: URL, _ arguments: [String]) throws {
            process = Process()
            process.executableURL = executable
            process.arguments = arguments
            let (output, error) = (Pipe(), Pipe())
            process.standardOutput = output
            process.standardError = error
            process.standardInput = FileHandle.nullDevice
            try process.run()
            Task { [self] in
                for await line in LineReader(output.fileHandleForReading).lines where line.hasPrefix("seq ") {
                    let seq = Int(line.dropFirst(4).prefix { $0.isNumber }) ?? 0
                    lastSeq.withLock { $0 = max($0, seq) }
                }
            }
            Task { [self] in
                for await line in LineReader(error.fileHandleForReading).lines { errors.withLock { $0.append(line) } }
            }
        }

        func waitForError(containing text: String, timeout: Duration = .seconds(60)) async throws -> String {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                if let line = errors.withLock({ $0.first { $0.contains(text) } }) { return line }
                guard process.isRunning else { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            throw BaselineError("\(process.arguments ?? []) did not print '\(text)': \(errors.withLock { $0 })")
        }

        func stop(_ signal: Int32) async {
            if process.isRunning { kill(process.processIdentifier, signal) }
            while process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
        }
    }

    func run(throughRelay: Bool) async throws -> Outcome {
        let hosts = try NetworkNamespaces(spokes: 2)
        defer { hosts.remove() }
        let folder = directory.appendingPathComponent("fanout-\(throughRelay ? "relay" : "direct")")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let model = folder.appendingPathComponent("model.json")
        try Data(DemoData.modelJSON.utf8).write(to: model)
        let input = folder.appendingPathComponent("input.ndjson")
        try DemoData.pullRequests(count: rows, users: max(1, rows / 50)).write(to: input)
        let store = folder.appendingPathComponent("store.sqlite").path
        let ip = URL(fileURLWithPath: NetworkNamespaces.ip)
        func binary(_ name: String) throws -> String { try Executables.sibling(name).path }
        func inHost(_ host: Int, _ name: String, _ arguments: [String]) throws -> [String] {
            hosts.command(in: host, URL(fileURLWithPath: try binary(name)), arguments).1
        }

        let log = try FileHandle(forWritingTo: folder.appendingPathComponent("coordinator.log").creatingFile())
        let coordinator = try await CoordinatorProcess.start(
            executable: ip,
            arguments: try inHost(
                0, "tributary-coordinator",
                [
                    "--store", store, "--model", model.path, "--listen", "tcp://0.0.0.0:7400", "--feed",
                    "tcp://0.0.0.0:7401", "--workers", "2", "--insecure", "--http", "off", "--log-level", "warning",
                ]), log: log)
        var started: [Followed] = []
        do {
            // Relays: one on each subscriber host, serving its subscribers on loopback.
            var relays: [Followed] = []
            if throughRelay {
                for host in 1...2 {
                    let relay = try Followed(
                        ip,
                        try inHost(
                            host, "tributary",
                            [
                                "relay", "--upstream-feed", "tcp://\(hosts.hubAddress(host)):7401", "--upstream-listen",
                                "tcp://\(hosts.hubAddress(host)):7400", "--log-level", "warning",
                            ]))
                    relays.append(relay)
                    started.append(relay)
                }
                // The banner is on standard output; the relay serves once it printed it, which a subscriber's
                // connect does not need to wait for (ZeroMQ connects when the other end binds).
            }
            let followers = try (0..<subscribers).map { index -> Followed in
                let host = 1 + index % 2
                let (feed, listen) =
                    throughRelay
                    ? ("tcp://127.0.0.1:7501", "tcp://127.0.0.1:7500")
                    : ("tcp://\(hosts.hubAddress(host)):7401", "tcp://\(hosts.hubAddress(host)):7400")
                let follower = try Followed(
                    ip,
                    try inHost(
                        host, "tributary",
                        ["subscribe", "--since", "0", "--latency", "--feed", feed, "--listen", listen]))
                started.append(follower)
                return follower
            }
            for follower in followers { _ = try await follower.waitForError(containing: "subscribed") }

            let cpuBefore = ProcessMemory.cpuSeconds(pid: coordinator.pid)
            let pushStarted = ContinuousClock.now
            let push = try Followed(
                ip,
                try inHost(
                    0, "tributary",
                    [
                        "push", "import", "--entity", "PullRequest", "--file", input.path, "--chunk", "500", "--wait",
                        "--listen", "tcp://127.0.0.1:7400",
                    ]))
            while push.process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
            guard push.process.terminationStatus == 0 else {
                throw BaselineError("the push failed: \(push.errors.withLock { $0 })")
            }
            let imported = ContinuousClock.now - pushStarted
            var configuration = Configuration()
            configuration.readonly = true
            let lastSeq = try await DatabaseQueue(path: store, configuration: configuration).read { db in
                try Int.fetchOne(db, sql: "SELECT MAX(seq) FROM tributary_history") ?? 0
            }
            let deadline = ContinuousClock.now + .seconds(300)
            while followers.contains(where: { $0.lastSeq.withLock { $0 } < lastSeq }) {
                guard ContinuousClock.now < deadline else { throw BaselineError("subscribers fell behind for 300 s") }
                try await Task.sleep(for: .milliseconds(10))
            }
            let delivered = ContinuousClock.now - pushStarted
            let cpu = ProcessMemory.cpuSeconds(pid: coordinator.pid) - cpuBefore
            let peak = ProcessMemory.peakResidentBytes(pid: coordinator.pid)
            var summaries: [(p50: Double, p99: Double, events: Int)] = []
            for follower in followers {
                await follower.stop(SIGINT)
                let line = try await follower.waitForError(containing: "latency:", timeout: .seconds(10))
                summaries.append(try Self.parse(line))
            }
            for relay in relays { await relay.stop(SIGTERM) }
            await coordinator.stop()
            let p50s = summaries.map(\.p50).sorted()
            let p99s = summaries.map(\.p99).sorted()
            return Outcome(
                commits: lastSeq, events: summaries.map(\.events).reduce(0, +), seconds: delivered.seconds,
                medianP50: p50s[p50s.count / 2], medianP99: p99s[p99s.count / 2], worstP99: p99s.last ?? 0,
                coordinatorCPUSeconds: cpu, coordinatorPeakBytes: peak,
                importRowsPerSecond: Double(rows) / imported.seconds)
        } catch {
            for process in started { await process.stop(SIGKILL) }
            await coordinator.stop()
            throw error
        }
    }

    /// `latency: N events, p50 X ms, p99 Y ms, max Z ms (…)` → (X, Y, N).
    static func parse(_ line: String) throws -> (p50: Double, p99: Double, events: Int) {
        let words = line.split(separator: " ").map { String($0).trimmingCharacters(in: .punctuationCharacters) }
        func after(_ word: String) -> Double? { words.firstIndex(of: word).flatMap { Double(words[$0 + 1]) } }
        guard let events = Int(words.dropFirst().first ?? ""), let p50 = after("p50"), let p99 = after("p99") else {
            throw BaselineError("cannot read the latency line '\(line)'")
        }
        return (p50, p99, events)
    }
}

extension URL {
    /// Creates an empty file here (replacing one) and returns the URL.
    fileprivate func creatingFile() throws -> URL {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw BaselineError("cannot create \(path)")
        }
        return self
    }
}
