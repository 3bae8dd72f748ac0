import ArgumentParser
import Foundation
import ServiceLifecycle
import TributaryCommandSupport
import TributaryCoordinator
import TributaryCore
import TributaryHTTP
import TributaryMessaging

/// `tributary-coordinator`: the root writer of a Tributary store.
@main
struct CoordinatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tributary-coordinator",
        abstract: "Own a Tributary store: queue jobs, merge workers' change sets, publish didSave events.",
        discussion: """
            Prints one line to standard output when it is serving:
              tributary-coordinator ready jobs=ENDPOINT feed=ENDPOINT store=PATH
            and one when its HTTP endpoint (metrics, health, JSON API, dashboard) listens:
              tributary-coordinator http=URL
            SIGTERM or SIGINT stops the local worker pool, then the coordinator, cleanly.
            With --cluster it also prints each role it takes (docs/failover.md):
              tributary-coordinator primary epoch=N          (then the ready line)
              tributary-coordinator standby of=NAME epoch=N
              tributary-coordinator waiting
              tributary-coordinator deposed epoch=N
            """)

    @Option(help: ArgumentHelp("The SQLite file of the root store (created if missing).", valueName: "path"))
    var store: String

    @Option(help: ArgumentHelp("The model file (JSON); see docs/model.md.", valueName: "path"))
    var model: String

    @Option(help: ArgumentHelp("Jobs/control ROUTER endpoint; port * picks a free one.", valueName: "endpoint"))
    var listen: String = Endpoints.defaultListen

    @Option(help: ArgumentHelp("Change feed PUB endpoint; port * picks a free one.", valueName: "endpoint"))
    var feed: String = Endpoints.defaultFeed

    @Option(help: "Start and supervise this many local tributary-worker processes.")
    var workers: Int = 0

    @Option(
        help: ArgumentHelp("The worker executable for --workers (default: the one beside this).", valueName: "path"))
    var workerPath: String?

    @Option(help: "Jobs each local worker runs at once (its --concurrency, 1 to 1,024).")
    var workerConcurrency: Int?

    @Option(
        help:
            "The CPU priority of the local workers' jobs (their --priority: background, utility or default): at background they yield the CPU to the store's writer, whose one thread paces an import."
    )
    var workerPriority: ProcessPriority = .background

    @Option(
        help: ArgumentHelp(
            "The named queues the local workers serve, in order or weighted (their --queues; default: default).",
            valueName: "queue,queue"))
    var workerQueues: String?

    @Option(
        help:
            "Hours to keep finished (done or cancelled) jobs; 0 keeps them. Dead jobs stay; a done job's payload goes at once."
    )
    var retentionHours: Double = 168

    @Option(
        help: ArgumentHelp(
            "Where `tributary backup --to FILE` may write (FILE relative to it, or inside it; default: the store's directory).",
            valueName: "path"))
    var backupDir: String?

    @Option(
        help: ArgumentHelp(
            "What a commit survives before it is acknowledged: full syncs each group commit to the disk first (a power loss takes back nothing acknowledged); normal syncs at checkpoints (a power loss can take back the last saves and completions; pushes and job, schedule and subscriber commands are synced anyway). See docs/durability.md.",
            valueName: "full|normal"),
        transform: { value in
            guard let level = Durability(rawValue: value) else {
                throw ValidationError("--durability must be full or normal, not '\(value)'")
            }
            return level
        })
    var durability: Durability = .full

    @Option(help: "Hours to keep the change history; 0 keeps it. History a durable subscriber has not read stays.")
    var historyHours: Double = 168

    @Option(help: "Most commits the change history keeps (the newest); 0 sets no limit.")
    var historyCommits: Int = 0

    @Option(help: "Most feed messages queued per subscriber; a slower one loses the rest and fills them from history.")
    var feedBuffer: Int32 = 200

    @Option(
        help:
            "Most rows (objects written) one group commit takes; saves arriving while the store writes wait for the next."
    )
    var commitRows: Int = CoordinatorConfiguration.defaultCommitRows

    @Option(
        help:
            "Longest a group commit should take, in seconds (0: no limit): fewer rows go in when the writer's pace says more would take longer, or when its other writes (pruning, failures) kept the saves waiting."
    )
    var commitSeconds: Double = CoordinatorConfiguration.defaultCommitSeconds ?? 0

    @Option(
        help: ArgumentHelp(
            "The coordinator's CURVE secret key file: encrypt every socket and admit only keys in --allow.",
            valueName: "path"))
    var curveSecret: String?

    @Option(
        help: ArgumentHelp(
            "The folder of admitted peers' public key files (NAME.pub with a role); reread on SIGHUP.",
            valueName: "dir"))
    var allow: String?

    @Flag(
        help: ArgumentHelp(
            "Allow --listen/--feed/--http beyond loopback without authentication (also \(Endpoints.insecureVariable)=1)."
        ))
    var insecure = false

    @Option(
        help: ArgumentHelp(
            "HTTP endpoint for /metrics, /healthz, /readyz, the JSON API and the dashboard (HOST:PORT, port * picks one; off).",
            valueName: "endpoint"))
    var http: String = HTTPEndpoint.defaultEndpoint

    @Option(
        help: ArgumentHelp(
            "A file holding the bearer token the HTTP endpoint requires beyond loopback (one line, 16+ characters; also TRIBUTARY_HTTP_TOKEN_FILE).",
            valueName: "path"))
    var httpToken: String?

    @Option(help: "Largest message (MiB) the jobs socket accepts; a peer sending more is disconnected.")
    var maxMessageMb: Int = 64

    @Option(help: "Largest job payload (MiB) a push may carry.")
    var maxPayloadMb: Int = 16

    @Option(help: "Most rows (NDJSON lines) one import job's payload may carry.")
    var maxPayloadRows: Int = 1_000_000

    @Option(help: "Most rows (objects) one change set may carry.")
    var maxChangeSetRows: Int = 1_000_000

    @Option(help: "Largest save message (MiB).")
    var maxChangeSetMb: Int = 32

    @Option(
        help:
            "Most requests one peer may have in flight: reads (history, snapshot, fetch, lists) and commands waiting for their write."
    )
    var maxPendingRequests: Int = 16

    @Option(
        name: .customLong("limit"),
        help: ArgumentHelp(
            "At most N jobs of a kind or queue running at once, across every worker (repeatable): kind:NAME=N or queue:NAME=N; kind:NAME/ARG=N limits per value of the job argument ARG (e.g. kind:export/customer=2).",
            valueName: "target=N"))
    var runLimits: [String] = []

    @Option(
        name: .customLong("rate-limit"),
        help: ArgumentHelp(
            "At most M jobs of a kind or queue started in any PERIOD, across every worker (repeatable): kind:NAME=M/PERIOD or queue:NAME=M/PERIOD, PERIOD like 1s, 5m, 1h; kind:NAME/ARG=M/PERIOD per value of the argument ARG.",
            valueName: "target=M/PERIOD"))
    var rateLimits: [String] = []

    @Option(
        help:
            "On SIGTERM, seconds running jobs may go on saving before they are handed back to the queue (the local pool's workers get it as their --shutdown-seconds)."
    )
    var drainSeconds: Double = 10

    @Option(
        help: ArgumentHelp(
            "Run as a member of this cluster (docs/failover.md): etcd elects the primary, the others are its synchronous standbys.",
            valueName: "name"))
    var cluster: String?

    @Option(help: ArgumentHelp("This coordinator's name in the cluster (default: the host's name).", valueName: "name"))
    var name: String?

    @Option(
        help: ArgumentHelp("etcd's client URLs, comma-separated, for --cluster.", valueName: "http://HOST:2379[,…]"))
    var etcd: String?

    @Option(
        help: ArgumentHelp(
            "Where this coordinator's standbys connect while it is primary, for --cluster.",
            valueName: "tcp://HOST:PORT"))
    var replicationListen: String?

    @Option(
        help: ArgumentHelp(
            "Where the standbys reach --replication-listen, when not where it binds (a forwarded port).",
            valueName: "tcp://HOST:PORT"))
    var replicationAdvertise: String?

    @Option(
        help: ArgumentHelp(
            "The host the other members and the clients reach this coordinator at, when its endpoints bind 0.0.0.0.",
            valueName: "host"))
    var advertiseHost: String?

    @Flag(
        help:
            "With --cluster: acknowledge commits without waiting for a standby (recorded in etcd first, so no standby is promoted)."
    )
    var asynchronousReplication = false

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard workers >= 0 && workers <= 256 else { throw ValidationError("--workers must be between 0 and 256") }
        _ = try parsedRunLimits()
        _ = try clusterSettings()
        guard drainSeconds >= 0 && drainSeconds <= 3600 else {
            throw ValidationError("--drain-seconds must be between 0 and 3600")
        }
        guard retentionHours >= 0 && retentionHours.isFinite else {
            throw ValidationError("--retention-hours must be 0 (keep) or more")
        }
        guard historyHours >= 0 && historyHours.isFinite else {
            throw ValidationError("--history-hours must be 0 (keep) or more")
        }
        guard (1...10_000_000).contains(commitRows) else {
            throw ValidationError("--commit-rows must be between 1 and 10000000")
        }
        guard commitSeconds >= 0 && commitSeconds <= 3600 else {
            throw ValidationError("--commit-seconds must be between 0 (no limit) and 3600")
        }
        guard (1...1_000_000).contains(feedBuffer) else {
            throw ValidationError("--feed-buffer must be between 1 and 1000000")
        }
        if let backupDir {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: backupDir, isDirectory: &isDirectory), isDirectory.boolValue
            else { throw ValidationError("--backup-dir \(backupDir) is not a directory") }
        }
        guard historyCommits >= 0 else { throw ValidationError("--history-commits must be 0 (no limit) or more") }
        if let workerConcurrency, !(1...1024).contains(workerConcurrency) {
            throw ValidationError("--worker-concurrency must be between 1 and 1024")
        }
        if let workerQueues {
            do {
                _ = try JobQueue.weightedList(workerQueues)
            } catch let error as JobQueueListError {
                throw ValidationError("--worker-queues: \(error.description)")
            }
        }
        guard listen != feed || listen.hasSuffix(":*") else {
            throw ValidationError("--listen and --feed must be different endpoints")
        }
        for (value, flag, range) in [
            (maxMessageMb, "--max-message-mb", 1...4096), (maxPayloadMb, "--max-payload-mb", 1...4096),
            (maxChangeSetRows, "--max-change-set-rows", 1...100_000_000),
            (maxPayloadRows, "--max-payload-rows", 1...100_000_000),
            (maxChangeSetMb, "--max-change-set-mb", 1...4096),
            (maxPendingRequests, "--max-pending-requests", 1...10_000),
        ] where !range.contains(value) {
            throw ValidationError("\(flag) must be between \(range.lowerBound) and \(range.upperBound)")
        }
        guard (curveSecret == nil) == (allow == nil) else {
            throw ValidationError("--curve-secret and --allow go together: the key to serve with, and who may connect")
        }
        if let curveSecret, let allow {
            do {
                _ = try CoordinatorCurve(secretFile: curveSecret, allowDirectory: allow)
                _ = try AllowList.load(directory: allow)
            } catch let error as KeyFileError {
                throw ValidationError(error.description)
            }
        }
        let insecureByEnvironment = ProcessInfo.processInfo.environment[Endpoints.insecureVariable] == "1"
        if let refusal = try httpEndpoint()?.refusal(insecure: insecure || insecureByEnvironment) {
            throw ValidationError(refusal)
        }
        let allowed = insecure || curveSecret != nil || insecureByEnvironment
        if !allowed {
            for (endpoint, flag) in [(listen, "--listen"), (feed, "--feed")] {
                if let refusal = Endpoints.refusal(toBind: endpoint, flag: flag) { throw ValidationError(refusal) }
            }
        }
    }

    /// The cluster of `--cluster` and the options that go with it; nil without `--cluster`.
    private func clusterSettings() throws -> ClusterSettings? {
        guard let cluster else {
            for (given, flag) in [
                (name != nil, "--name"), (etcd != nil, "--etcd"), (replicationListen != nil, "--replication-listen"),
                (advertiseHost != nil, "--advertise-host"), (replicationAdvertise != nil, "--replication-advertise"),
                (asynchronousReplication, "--asynchronous-replication"),
            ] where given {
                throw ValidationError("\(flag) has no use without --cluster")
            }
            return nil
        }
        guard let etcd else { throw ValidationError("--cluster needs --etcd (etcd's client URLs)") }
        guard let replicationListen else {
            throw ValidationError("--cluster needs --replication-listen (where the standbys connect)")
        }
        guard durability == .full else {
            throw ValidationError("--cluster needs --durability full: a primary's commits must be on its disk too")
        }
        var settings = ClusterSettings(
            cluster: cluster, name: name ?? ProcessInfo.processInfo.hostName,
            etcd: etcd.split(separator: ",").map { String($0) }, replicationListen: replicationListen)
        settings.advertiseHost = advertiseHost
        settings.replicationAdvertise = replicationAdvertise
        settings.asynchronous = asynchronousReplication
        if let refusal = settings.refusal(listen: listen, feed: feed) { throw ValidationError(refusal) }
        return settings
    }

    /// The `--limit` options.
    private func parsedRunLimits() throws -> RunLimits {
        var limits = RunLimits()
        do {
            for text in runLimits { try limits.add(text) }
            for text in rateLimits { try limits.addRate(text) }
        } catch let error as RunLimitError {
            throw ValidationError("--limit/--rate-limit \(error.description)")
        }
        return limits
    }

    /// The HTTP endpoint of `--http` with the token of `--http-token`; nil when off.
    private func httpEndpoint() throws -> HTTPEndpoint? {
        let environment = ProcessInfo.processInfo.environment["TRIBUTARY_HTTP_TOKEN_FILE"].flatMap {
            $0.isEmpty ? nil : $0
        }
        let tokenFile = httpToken ?? environment
        do {
            guard var endpoint = try HTTPEndpoint.parse(http) else {
                if httpToken != nil { throw ValidationError("--http-token has no use with --http off") }
                return nil
            }
            endpoint.token = try tokenFile.map { try HTTPEndpoint.readToken(file: $0) }
            return endpoint
        } catch let error as HTTPEndpointError {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        let logger = logging.makeLogger(label: "tributary.coordinator")
        let httpEndpoint = try httpEndpoint()
        do {
            try httpEndpoint?.checkAvailable()
        } catch let error as HTTPEndpointError {
            throw ValidationError(error.description)
        }
        // Before the coordinator makes its metrics' handles (on first use).
        let exporter = MetricsExporter.bootstrap()
        var configuration = CoordinatorConfiguration(
            storePath: store, model: try Model.load(contentsOf: URL(fileURLWithPath: model)))
        configuration.listen = listen
        configuration.feed = feed
        configuration.localWorkers = workers
        configuration.drainGracePeriod = .seconds(drainSeconds)
        configuration.finishedJobRetention = retentionHours > 0 ? .seconds(retentionHours * 3600) : nil
        configuration.durability = durability
        configuration.historyRetention = historyHours > 0 ? .seconds(historyHours * 3600) : nil
        configuration.historyMaximumCommits = historyCommits > 0 ? historyCommits : nil
        configuration.feedBuffer = feedBuffer
        configuration.commitRows = commitRows
        configuration.commitSeconds = commitSeconds > 0 ? commitSeconds : nil
        configuration.runLimits = try parsedRunLimits()
        configuration.cluster = try clusterSettings()
        configuration.backupDirectory = backupDir.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        if let curveSecret, let allow {
            let curve = try CoordinatorCurve(secretFile: curveSecret, allowDirectory: allow)
            configuration.curve = curve
            // The local pool connects with the coordinator's own key, which counts as a worker's.
            configuration.workerArguments += ["--curve-secret", curve.secretFile, "--server-key", curve.secretFile]
        }
        configuration.limits.maximumMessageBytes = Int64(maxMessageMb) << 20
        configuration.limits.maximumPayloadBytes = maxPayloadMb << 20
        configuration.limits.maximumChangeSetRows = maxChangeSetRows
        configuration.limits.maximumPayloadRows = maxPayloadRows
        configuration.limits.maximumChangeSetBytes = maxChangeSetMb << 20
        configuration.limits.maximumPendingRequestsPerPeer = maxPendingRequests
        if workers > 0 {
            configuration.workerExecutable =
                try workerPath.map { URL(fileURLWithPath: $0) }
                ?? Executables.sibling("tributary-worker")
            if let level = logging.logLevel { configuration.workerArguments += ["--log-level", level] }
            configuration.workerArguments += ["--priority", workerPriority.rawValue]
            if let workerConcurrency {
                configuration.workerArguments += ["--concurrency", String(workerConcurrency)]
            }
            if let workerQueues { configuration.workerArguments += ["--queues", workerQueues] }
        }
        let storePath = store
        let services: @Sendable (CoordinatorServer) -> [any Service] = { server in
            guard let httpEndpoint else { return [] }
            return [
                HTTPService(endpoint: httpEndpoint, server: server, exporter: exporter, logger: logger) { url in
                    Terminal.line("tributary-coordinator http=\(url)")
                }
            ]
        }
        let ready: @Sendable (CoordinatorServer) -> Void = { server in
            Terminal.line(
                "tributary-coordinator ready jobs=\(server.listenEndpoint) feed=\(server.feedEndpoint) store=\(storePath)"
            )
        }
        let service: any Service
        if configuration.cluster != nil {
            service = try ClusterNode(
                configuration: configuration, logger: logger, services: services, ready: ready,
                standbyServices: { standby in
                    guard let httpEndpoint else { return [] }
                    return [
                        StandbyHTTPService(endpoint: httpEndpoint, standby: standby, exporter: exporter, logger: logger)
                        { url in Terminal.line("tributary-coordinator http=\(url)") }
                    ]
                },
                standing: { Terminal.line("tributary-coordinator \($0.line)") })
        } else {
            service = CoordinatorService(configuration: configuration, logger: logger, services: services, ready: ready)
        }
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: service)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await ServiceMain.run(group, logger: logger)
    }
}

extension ClusterStanding {
    /// How the executable prints it, after `tributary-coordinator `.
    fileprivate var line: String {
        switch self {
        case .primary(let epoch): "primary epoch=\(epoch)"
        case .standby(let leader, let epoch): "standby of=\(leader) epoch=\(epoch)"
        case .waiting: "waiting"
        case .deposed(let epoch): "deposed epoch=\(epoch)"
        }
    }
}
