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
    /// so jobs in flight keep the worker busy and the commits large (measured on a 1M-row import: 4 → 23,000–25,000
    /// rows/s, 8 and 16 → 22,800–28,000 alike; 16 took the coordinator's peak RSS from 173 to 212 MB, as each job
    /// in flight holds its change set there; docs/benchmarks.md). Once the local pool ran at background priority, so
    /// the writer no longer waited for a core, 16 paid: 39,127 / 40,712 against 35,532 / 34,405 rows/s, commits of
    /// more saves (bytes written 4.5 → 3.4 GB), peak RSS 166–179 against 152–163 MB. Once import workers and the
    /// writer's merge cost less CPU (issue 16's tenth session), the writer's commits were what held the import, and
    /// 32 paid: 84,894 rows/s against 73,631 with 24 and 64,195 with 16 (1M rows, one run each, alternated), peak RSS
    /// 169 MB (168 with a stalled subscriber) with the writer's cache at 32 MiB; 48 reached 175 / 189 MB.
    public var concurrency = WorkerConfiguration.defaultConcurrency
    /// The default of ``concurrency``.
    public static let defaultConcurrency = 32
    /// The job handlers, by kind. The built-in `import` and `noop` handlers are always there.
    public var handlers: [any JobHandler] = [ImportJobHandler(), NoopJobHandler()]
    /// The named queues it serves, in order: a job of the first that has one due, then of the next.
    public var queues: [String] = [JobQueue.defaultName]
    /// Weights of ``queues`` (one each), or empty for their strict order (``JobQueue/claimOrder(_:weights:using:)``).
    public var queueWeights: [UInt32] = []

    public init() {}

    /// Adds a handler for a job kind of your own (replacing one of the same kind).
    public mutating func register(_ handler: any JobHandler) {
        handlers.removeAll { $0.kind == handler.kind }
        handlers.append(handler)
    }
}
