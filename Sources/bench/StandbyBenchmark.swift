import Foundation
import Synchronization
import TributaryCluster
import TributaryCommandSupport
import TributaryDemo
import TributaryTestSupport

/// The standby figures (docs/failover.md): `save round trip`, `jobs` and `import` with the coordinator as a cluster's
/// primary whose every commit waits for a synchronous standby on another host, beside the same figures with the
/// coordinator alone, in the same run. The hosts are network namespaces: A holds etcd, the coordinator and the
/// benchmark's clients, B the standby, linked by a veth pair. Needs root (the namespaces) and Debian's etcd.
///
/// The benchmark runs itself inside host A (``hostsOption``): its clients reach the primary there.
struct StandbyBenchmark {
    /// Where the standby runs and the addresses of the link: host A's namespace, B's, and their addresses.
    struct Hosts {
        let hub: String
        let spoke: String
        let hubAddress: String
        let spokeAddress: String

        /// As `--standby-hosts` says them: `A,B,A-ADDRESS,B-ADDRESS`.
        var option: String { [hub, spoke, hubAddress, spokeAddress].joined(separator: ",") }

        init(_ namespaces: NetworkNamespaces) {
            hub = namespaces.names[0]
            spoke = namespaces.names[1]
            hubAddress = namespaces.hubAddress(1)
            spokeAddress = namespaces.spokeAddress(1)
        }

        init?(option: String) {
            let parts = option.split(separator: ",").map(String.init)
            guard parts.count == 4 else { return nil }
            (hub, spoke, hubAddress, spokeAddress) = (parts[0], parts[1], parts[2], parts[3])
        }
    }

    let hosts: Hosts
    let directory: URL
    let rows: Int
    let saves: Int
    let jobs: Int
    let workers: Int
    let rounds: Int

    /// Measures each figure alone and with the standby, alternated `rounds` times (medians), and prints them.
    func run() async throws {
        let etcd = try await EtcdProcess(
            address: hosts.hubAddress, ports: (2379, 2380), directory: directory.appendingPathComponent("etcd"))
        defer { etcd.stop() }
        let cluster = StandbyCluster(hosts: hosts, etcd: etcd.endpoint)
        let standby = cluster.launch
        let of = rounds > 1 ? "; medians of \(rounds) alternated rounds" : ""

        let saves = try await alternated("saves", standby) { launch, folder in
            var roundTrips = SaveRoundTripBenchmark(directory: folder)
            roundTrips.launch = launch
            return try await roundTrips.run(saves: self.saves, savers: 1)
        }
        for (suffix, percentile) in [("p50", \Percentiles.p50), ("p99", \Percentiles.p99)] {
            let alone = BenchCommand.median(saves.alone.map { Percentiles($0.latencies)[keyPath: percentile].seconds })
            let with = BenchCommand.median(saves.standby.map { Percentiles($0.latencies)[keyPath: percentile].seconds })
            Terminal.line(
                Figure(
                    name: "save round trip \(suffix) (standby)", tributary: with * 1000, baseline: alone * 1000,
                    unit: "ms", smallerIsBetter: true,
                    note: "one view context; each commit waits for the standby's synced copy on host B; baseline: "
                        + "the same coordinator alone\(of)"
                ).line)
        }
        Terminal.line(
            Figure(
                name: "save round trip (standby)", tributary: BenchCommand.median(saves.standby.map(\.savesPerSecond)),
                baseline: BenchCommand.median(saves.alone.map(\.savesPerSecond)), unit: "saves/s",
                note: "baseline: the same coordinator alone\(of)"
            ).line)

        let jobs = try await alternated("jobs", standby) { launch, folder in
            var benchmark = JobsBenchmark(jobs: self.jobs, workers: workers, concurrency: 512, directory: folder)
            benchmark.launch = launch
            return try await benchmark.run().jobsPerSecond
        }
        Terminal.line(
            Figure(
                name: "jobs (standby)", tributary: BenchCommand.median(jobs.standby),
                baseline: BenchCommand.median(jobs.alone), unit: "jobs/s",
                note: "\(self.jobs.formatted()) empty jobs, each push, claim and completion held for the standby; "
                    + "baseline: the same coordinator alone\(of)"
            ).line)

        let input = DemoData.pullRequests(count: rows, users: max(1, rows / 50))
        let imports = try await alternated("import", standby) { launch, folder in
            var benchmark = ImportBenchmark(
                input: input, rows: rows, workers: workers, extraArguments: [], directory: folder)
            benchmark.launch = launch
            return try await benchmark.run(stalledSubscriber: false).rowsPerSecond
        }
        Terminal.line(
            Figure(
                name: "import (standby)", tributary: BenchCommand.median(imports.standby),
                baseline: BenchCommand.median(imports.alone), unit: "rows/s",
                note: "\(rows.formatted()) pull requests, every commit's changes copied to host B and synced there "
                    + "first; baseline: the same coordinator alone\(of)"
            ).line)
    }

    /// `measure` with the coordinator alone, then with `standby`, `rounds` times over (the machine drifts between
    /// minutes), each run in a folder of its own; the outcomes of each, in order.
    private func alternated<Outcome>(
        _ what: String, _ standby: CoordinatorLaunch,
        _ measure: (_ launch: CoordinatorLaunch, _ folder: URL) async throws -> Outcome
    ) async throws -> (alone: [Outcome], standby: [Outcome]) {
        var alone: [Outcome] = []
        var withStandby: [Outcome] = []
        for round in 1...rounds {
            alone.append(try await measure(.alone, directory.appendingPathComponent("\(what)-alone-\(round)")))
            withStandby.append(
                try await measure(standby, directory.appendingPathComponent("\(what)-standby-\(round)")))
            Terminal.error("bench: standby \(what), round \(round) of \(rounds) done")
        }
        return (alone, withStandby)
    }
}

/// Starts a coordinator as the primary of a cluster of two on ``StandbyBenchmark/Hosts``: the primary on host A,
/// its synchronous standby on host B; each start is a cluster of its own (a name and ports of its own), and returns
/// once the standby is recorded in sync, so that the figures measure a primary whose commits wait for it.
struct StandbyCluster: Sendable {
    let hosts: StandbyBenchmark.Hosts
    let etcd: String
    private let starts = Counter()

    init(hosts: StandbyBenchmark.Hosts, etcd: String) {
        self.hosts = hosts
        self.etcd = etcd
    }

    var launch: CoordinatorLaunch {
        CoordinatorLaunch { folder, arguments in try await start(in: folder, arguments: arguments) }
    }

    private func start(in folder: URL, arguments: [String]) async throws -> LaunchedCoordinator {
        let number = starts.next()
        let cluster = "bench\(number)"
        // Ports of this start's own: a cluster's endpoints are named in etcd, so they cannot be `*`.
        let port = 7400 + number * 10
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let model = folder.appendingPathComponent("model.json")
        try Data(DemoData.modelJSON.utf8).write(to: model)
        func member(_ name: String, address: String) -> [String] {
            [
                "--cluster", cluster, "--name", name, "--etcd", etcd,
                "--store", folder.appendingPathComponent("\(name).sqlite").path, "--model", model.path,
                "--listen", "tcp://\(address):\(port)", "--feed", "tcp://\(address):\(port + 1)",
                "--replication-listen", "tcp://\(address):\(port + 2)",
                // Addresses inside the benchmark's own namespaces: no CURVE keys to make.
                "--insecure",
            ]
        }
        let coordinator = try Executables.sibling("tributary-coordinator")
        let primaryLog = folder.appendingPathComponent("primary.log")
        let standbyLog = folder.appendingPathComponent("standby.log")
        for log in [primaryLog, standbyLog] {
            guard FileManager.default.createFile(atPath: log.path, contents: nil) else {
                throw BaselineError("cannot create \(log.path)")
            }
        }
        let primary = try await CoordinatorProcess.start(
            executable: coordinator, arguments: member("a", address: hosts.hubAddress) + arguments,
            log: try FileHandle(forWritingTo: primaryLog))
        let standby = Process()
        standby.executableURL = URL(fileURLWithPath: NetworkNamespaces.ip)
        standby.arguments =
            ["netns", "exec", hosts.spoke, coordinator.path] + member("b", address: hosts.spokeAddress)
            + ["--http", "off", "--log-level", "warning"]
        standby.standardOutput = FileHandle.nullDevice
        standby.standardError = try FileHandle(forWritingTo: standbyLog)
        standby.standardInput = FileHandle.nullDevice
        // SIGKILL: a standby stopped gracefully after its primary would take over, and wait for a standby of its own.
        let stopStandby = { @Sendable in
            if standby.isRunning { kill(standby.processIdentifier, SIGKILL) }
            while standby.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        }
        do {
            try standby.run()
            let sync = ClusterSyncRecord(etcd: try EtcdClient(endpoints: [etcd]), cluster: cluster)
            let deadline = ContinuousClock.now + .seconds(60)
            while (try? await sync.read())??.standbys != ["b"] {
                guard standby.isRunning, ContinuousClock.now < deadline else {
                    throw BaselineError("the standby did not come in sync; see \(standbyLog.path)")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        } catch {
            await primary.stop()
            await stopStandby()
            throw error
        }
        return LaunchedCoordinator(
            process: primary, storePath: folder.appendingPathComponent("a.sqlite").path, logPath: primaryLog.path,
            stop: {
                // The standby first, so that the primary does not hand over as it stops; it drops the standby from
                // the sync state within seconds.
                await stopStandby()
                await primary.stop()
            })
    }

    /// Numbers the starts.
    private final class Counter: Sendable {
        private let value = Mutex(0)
        func next() -> Int {
            value.withLock {
                $0 += 1; return $0
            }
        }
    }
}
