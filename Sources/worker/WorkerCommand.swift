import ArgumentParser
import Foundation
import ServiceLifecycle
import TributaryClient
import TributaryCommandSupport
import TributaryCore
import TributaryMessaging

/// `tributary-worker`: runs jobs in slave contexts and sends their change sets to the coordinator.
@main
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tributary-worker",
        abstract: "Run Tributary jobs (the built-in 'import' kind) for a coordinator.",
        discussion:
            "SIGTERM or SIGINT: take no new job, give the running ones --shutdown-seconds to finish, interrupt those still running (the coordinator hands them back to the queue without counting an attempt), then exit 0 (within about 2 s when not registered yet)."
    )

    @Option(
        help: ArgumentHelp(
            "The coordinator's jobs/control endpoint, or a cluster's members' comma-separated (env \(Endpoints.listenVariable)).",
            valueName: "endpoint"))
    var connect: String?

    @Option(
        help: ArgumentHelp(
            "This worker's CURVE secret key file, for a coordinator with CURVE (env \(CurveClientKeys.secretVariable)).",
            valueName: "path"))
    var curveSecret: String?

    @Option(
        help: ArgumentHelp(
            "The coordinator's public key file (env \(CurveClientKeys.serverKeyVariable)).", valueName: "path"))
    var serverKey: String?

    @Option(help: "A name shown in `tributary status` (default: host:pid).")
    var name: String?

    @Option(help: "Milliseconds between heartbeats, announced to the coordinator.")
    var heartbeatMs: Int = 1000

    @Option(help: "Jobs run at once, each in its own context (1 to 1,024).")
    var concurrency: Int = WorkerConfiguration.defaultConcurrency

    @Option(
        help: ArgumentHelp(
            "The named queues to serve, in order (a job of the first that has one due, then of the next), or weighted (imports:3,default:1).",
            valueName: "queue,queue"))
    var queues: String = JobQueue.defaultName

    @Option(
        parsing: .unconditional,
        help:
            "Seconds the running jobs get to finish after SIGTERM or SIGINT; then they are interrupted at their next save and handed back to the queue without counting an attempt, and saves still unanswered are given up (0 to 3600)."
    )
    var shutdownSeconds: Double = Double(WorkerConfiguration.defaultShutdownTimeout.components.seconds)

    @Option(
        help:
            "The CPU priority jobs run at: background (nice 10), utility (nice 2) or default (a coordinator's pool runs at its --worker-priority, background unless told otherwise, so the store's writer never waits for a core)."
    )
    var priority: ProcessPriority = .default

    @Option(
        help:
            "Stop at once, without finishing running jobs (the next coordinator runs them again), when this process is no longer the parent (set by a coordinator's pool)."
    )
    var parentPid: Int32?

    @Option(
        help: ArgumentHelp(
            "Append a JSON line to this file as each job attempt starts and as it ends (job, attempt, worker id, outcome, wall and monotonic times).",
            valueName: "path"))
    var jobLog: String?

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        do {
            _ = try JobQueue.weightedList(queues)
        } catch let error as JobQueueListError {
            throw ValidationError("--queues: \(error.description)")
        }
        guard (1...1024).contains(concurrency) else {
            throw ValidationError(
                "--concurrency must be between 1 and 1024 (the most jobs the coordinator leases one worker)")
        }
        guard (0...3600).contains(shutdownSeconds) else {
            throw ValidationError("--shutdown-seconds must be between 0 and 3600")
        }
        guard (50...60_000).contains(heartbeatMs) else {
            throw ValidationError("--heartbeat-ms must be between 50 and 60000")
        }
        if let jobLog {
            let directory = URL(fileURLWithPath: jobLog).deletingLastPathComponent().path
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw ValidationError("--job-log: the directory \(directory) does not exist")
            }
        }
        do {
            _ = try CurveClientKeys.resolve(secretFile: curveSecret, serverKeyFile: serverKey)
        } catch let error as KeyFileError {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        let logger = logging.makeLogger(label: "tributary.worker")
        var configuration = WorkerConfiguration()
        configuration.endpoint = Endpoints.listen(connect)
        configuration.curve = try CurveClientKeys.resolve(secretFile: curveSecret, serverKeyFile: serverKey)
        if let name { configuration.name = name }
        configuration.heartbeatInterval = .milliseconds(heartbeatMs)
        configuration.concurrency = concurrency
        configuration.shutdownTimeout = .milliseconds(Int64((shutdownSeconds * 1000).rounded()))
        (configuration.queues, configuration.queueWeights) = try JobQueue.weightedList(queues)
        configuration.jobLogPath = jobLog
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: WorkerService(configuration: configuration, logger: logger))],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        let parentPid = parentPid
        try await priority.run { try await ServiceMain.run(group, parentPid: parentPid, logger: logger) }
    }
}
