import Foundation
import Metrics
import Prometheus
import Synchronization
import TributaryCoordinator
import TributaryCore

/// The Prometheus side of the coordinator's metrics: the registry that swift-metrics records into (bootstrapped
/// once per process, ``bootstrap()``), and the gauges read from the coordinator at each scrape.
public final class MetricsExporter: Sendable {
    let registry: PrometheusCollectorRegistry
    private let subscriberGauges = Mutex<Set<String>>([])
    private let queueGauges = Mutex<Set<String>>([])
    /// The standbys whose lag has a series.
    private let standbyGauges = Mutex<Set<String>>([])

    /// Makes the registry and bootstraps swift-metrics with it, with each family's HELP text and buckets for the
    /// coordinator's histograms.
    /// Call once, before the coordinator starts (its handles are made on first use).
    public static func bootstrap() -> MetricsExporter {
        let exporter = MetricsExporter()
        var factory = DescribedMetricsFactory(registry: exporter.registry)
        let jobSeconds: [Duration] = [
            .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(300),
            .seconds(900), .seconds(3600),
        ]
        let commitSeconds: [Duration] = [
            .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
        ]
        factory.durationBuckets = [
            MetricNames.jobRunSeconds: jobSeconds, MetricNames.jobQueueWaitSeconds: jobSeconds,
            MetricNames.groupCommitSeconds: commitSeconds, MetricNames.saveCommitSeconds: commitSeconds,
            MetricNames.commitPublishSeconds: commitSeconds, MetricNames.writeSeconds: commitSeconds,
        ]
        factory.valueBuckets = [
            MetricNames.groupCommitRows: [1, 10, 100, 1_000, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000]
        ]
        MetricsSystem.bootstrap(factory)
        return exporter
    }

    /// An exporter with a registry of its own (without bootstrapping swift-metrics: for an embedded coordinator
    /// whose process has another backend, this exports the scrape-time gauges only).
    public init() {
        registry = PrometheusCollectorRegistry()
    }

    /// The metrics in the Prometheus text format, with the gauges read from the coordinator now.
    func scrape(_ server: CoordinatorServer) async throws -> [UInt8] {
        // Asked afresh by each scrape, so a scrape that follows a command's end sees what it did.
        let handlers = server.handlers
        let status = try await handlers.answer { handlers.status.status() }
        let subscribers = try await handlers.answer { handlers.subscribers.list() }
        for state in JobState.allCases {
            gauge(MetricNames.jobs, [("state", state.rawValue)]).set(Double(status.jobs[state]))
        }
        gauge(MetricNames.workersConnected).set(Double(status.workers.count))
        let sizes = StoreFiles.sizes(of: server.store.path)
        gauge(MetricNames.storeBytes).set(Double(sizes.store))
        gauge(MetricNames.walBytes).set(Double(sizes.wal))
        gauge(MetricNames.storeWritable).set(status.storeUnwritable == nil ? 1.0 : 0.0)
        gauge(MetricNames.historyOldestSeq).set(Double(status.oldestHistorySeq))
        gauge(MetricNames.historyNewestSeq).set(Double(status.lastSeq))
        if let cluster = status.cluster {
            gauge(MetricNames.clusterPrimary).set(1.0)
            gauge(MetricNames.clusterEpoch).set(Double(cluster.epoch))
            gauge(MetricNames.clusterWritesBlocked).set(cluster.writesBlocked ? 1.0 : 0.0)
            gauge(MetricNames.clusterHeldWrites).set(Double(cluster.heldWrites))
            gauge(MetricNames.clusterStandbysInSync).set(Double(cluster.standbys.filter(\.inSync).count))
            standbyLags(cluster.standbys)
        }
        if let resident = Self.residentMemoryBytes() { gauge(MetricNames.processResidentMemory).set(Double(resident)) }
        queueGauges.withLock { known in
            // Queue names come from clients: at most 64 of them get series (the deepest first), like job kinds.
            for queue in status.queues.sorted(by: { $0.queued > $1.queued })
            where known.contains(queue.name) || known.count < Self.maximumQueueSeries {
                known.insert(queue.name)
                gauge(MetricNames.queueJobs, [("queue", queue.name)]).set(Double(queue.queued))
                gauge(MetricNames.queueLatencySeconds, [("queue", queue.name)])
                    .set(Double(queue.latencySeconds))
                gauge(MetricNames.queuePaused, [("queue", queue.name)]).set(queue.paused ? 1.0 : 0.0)
            }
            // A queue emptied since the last scrape reads 0 rather than disappearing: alerts keep their series.
            let names = Set(status.queues.map(\.name))
            for name in known.subtracting(names) {
                gauge(MetricNames.queueJobs, [("queue", name)]).set(Double(0))
                gauge(MetricNames.queueLatencySeconds, [("queue", name)]).set(Double(0))
                gauge(MetricNames.queuePaused, [("queue", name)]).set(Double(0))
            }
        }
        // Set and retired under one lock, so two scrapes at once cannot bring back a deleted subscriber's gauge.
        subscriberGauges.withLock { known in
            for subscriber in subscribers {
                let lag = status.lastSeq > subscriber.position ? status.lastSeq - subscriber.position : 0
                gauge(MetricNames.subscriberLagCommits, [("subscriber", subscriber.name)])
                    .set(Double(lag))
            }
            let names = Set(subscribers.map(\.name))
            // A deleted subscriber's gauge goes, rather than showing its last lag for ever.
            for name in known.subtracting(names) {
                registry.unregisterGauge(gauge(MetricNames.subscriberLagCommits, [("subscriber", name)]))
            }
            known = names
        }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16_384)
        registry.emit(into: &buffer)
        return buffer
    }

    private static let maximumQueueSeries = 64

    /// The metrics of a cluster's standby (its HTTP endpoint's `/metrics`): the process's counters, and its own
    /// replication read now; the primary's gauges read 0 and its standbys' lag series go.
    func scrape(standby: StandbyState) -> [UInt8] {
        let status = standby.status()
        gauge(MetricNames.clusterPrimary).set(0.0)
        gauge(MetricNames.clusterEpoch).set(Double(status.epoch))
        gauge(MetricNames.clusterStandbyLastRecord).set(Double(status.lastRecord))
        gauge(MetricNames.clusterStandbySecondsSinceRecord).set(status.secondsSinceRecord)
        gauge(MetricNames.clusterWritesBlocked).set(0.0)
        gauge(MetricNames.clusterHeldWrites).set(0.0)
        gauge(MetricNames.clusterStandbysInSync).set(0.0)
        standbyLags([])
        if let resident = Self.residentMemoryBytes() { gauge(MetricNames.processResidentMemory).set(Double(resident)) }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16_384)
        registry.emit(into: &buffer)
        return buffer
    }

    /// Sets each standby's lag, and retires the series of standbys no longer listed. Standbys are the cluster's
    /// members, a handful: each keeps its series while its primary lists it.
    private func standbyLags(_ standbys: [ClusterStatus.Standby]) {
        standbyGauges.withLock { known in
            for standby in standbys {
                gauge(MetricNames.clusterStandbyLagRecords, [("standby", standby.name)]).set(Double(standby.lagRecords))
            }
            let names = Set(standbys.map(\.name))
            for name in known.subtracting(names) {
                registry.unregisterGauge(gauge(MetricNames.clusterStandbyLagRecords, [("standby", name)]))
            }
            known = names
        }
    }

    /// The process's resident memory: the second number of `/proc/self/statm` (pages), in bytes; nil where there is
    /// no such file. A read of the kernel's memory, not of a disk.
    static func residentMemoryBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The gauge `name` with `labels`, registered with its HELP text from the same table as the other families.
    private func gauge(_ name: String, _ labels: [(String, String)] = []) -> Prometheus.Gauge {
        registry.makeGauge(descriptor: .described(name), labels: labels)
    }
}
