import Foundation
import TributaryCore
import TributaryMessaging

/// How a worker process reaches its coordinator and which jobs it runs.
public struct WorkerConfiguration: Sendable {
    /// The coordinator's jobs/control endpoint.
    public var endpoint: String = Endpoints.defaultListen
    /// The worker's CURVE keys, for a coordinator that runs with CURVE (nil: from the environment, else none).
    public var curve: CurveClientKeys?
    /// A human name shown in `tributary status`.
    public var name: String = ProcessInfo.processInfo.hostName + ":\(getpid())"
    /// How often to send heartbeats; announced to the coordinator in the hello.
    public var heartbeatInterval: Duration = .seconds(1)
    /// How many jobs run at once, each in its own context. More than the cores the worker has pays even for
    /// CPU-bound import jobs: a job's save waits for a group commit, and the next job's leasing for the one after,
    /// so jobs in flight keep the worker busy, and a group commit covers the saves in flight, so they keep the commits
    /// large. Each job in flight holds its change set in the coordinator until its commit: the default weighs larger
    /// commits against the coordinator's memory (see docs/benchmarks.md, 'Import').
    public var concurrency = WorkerConfiguration.defaultConcurrency
    /// The default of ``concurrency``.
    public static let defaultConcurrency = 32
    /// The job handlers, by kind. The built-in `import` and `noop` handlers are always there.
    public var handlers: [any JobHandler] = [ImportJobHandler(), NoopJobHandler()]
    /// How long the running jobs get to finish once the worker is told to stop (SIGTERM, SIGINT). Then they are
    /// interrupted: cancelled at their next save or ``JobRun/checkCancellation()``, their unanswered saves given up
    /// (the coordinator may have died with them), and handed back to the queue by the worker's goodbye without an
    /// attempt counted. The default leaves room inside the systemd unit's `TimeoutStopSec` of 60 s.
    public var shutdownTimeout: Duration = WorkerConfiguration.defaultShutdownTimeout
    /// The default of ``shutdownTimeout``, Sidekiq's.
    public static let defaultShutdownTimeout: Duration = .seconds(25)
    /// The named queues it serves, in order: a job of the first that has one due, then of the next.
    public var queues: [String] = [JobQueue.defaultName]
    /// Weights of ``queues`` (one each), or empty for their strict order
    /// (``/TributaryCore/JobQueue/claimOrder(_:weights:using:)``).
    public var queueWeights: [UInt32] = []

    /// Where the worker records each job attempt's start and end as a JSON line (``JobLog``); nil: nowhere.
    public var jobLogPath: String?

    /// The defaults: the local coordinator's default endpoint, the `default` queue, the built-in handlers only.
    public init() {}

    /// Adds a handler for a job kind of your own (replacing one of the same kind).
    public mutating func register(_ handler: any JobHandler) {
        handlers.removeAll { $0.kind == handler.kind }
        handlers.append(handler)
    }
}
