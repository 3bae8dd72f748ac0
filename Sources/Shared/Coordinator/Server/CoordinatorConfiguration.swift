import Foundation
import TributaryCore
import TributaryMessaging

/// Everything a coordinator needs to start: the store, the model, its endpoints and its local worker pool.
public struct CoordinatorConfiguration: Sendable {
    /// The SQLite file of the root store.
    public var storePath: String
    /// The model the store is opened with.
    public var model: Model
    /// What a commit survives before it is acknowledged (see ``Durability``; docs/durability.md).
    public var durability: Durability = .full
    /// The jobs/control ROUTER endpoint; a `*` port binds a free port.
    public var listen: String = Endpoints.defaultListen
    /// The feed PUB endpoint; a `*` port binds a free port.
    public var feed: String = Endpoints.defaultFeed
    /// How many local `tributary-worker` processes to start and supervise.
    public var localWorkers: Int = 0
    /// The worker executable for the local pool.
    public var workerExecutable: URL?
    /// Extra arguments for each local worker.
    public var workerArguments: [String] = []
    /// Heartbeats a worker may miss before it is declared dead and its jobs return to the queue.
    public var liveness: UInt32 = 3
    /// How long finished (done or cancelled) jobs and their payloads are kept; nil keeps them for ever. Dead jobs
    /// are always kept until retried.
    public var finishedJobRetention: Duration? = .seconds(7 * 24 * 3600)
    /// How long the change history is kept; nil keeps it by age for ever. History after a durable subscriber's
    /// position is kept whatever its age.
    public var historyRetention: Duration? = .seconds(7 * 24 * 3600)
    /// How many of the newest commits the history keeps at most; nil sets no count limit.
    public var historyMaximumCommits: Int?
    /// On a graceful stop, how long running jobs may go on saving before they are handed back to the queue.
    public var drainGracePeriod: Duration = .seconds(10)
    /// The most feed messages queued for one subscriber (the PUB high-water mark); beyond it, that subscriber's
    /// messages are dropped (it fills the gap from history).
    public var feedBuffer: Int32 = 200
    /// The most rows (objects written) one group commit takes: saves gather while the store writes, and the next
    /// commit takes them up to this budget. Larger commits rewrite each index page once for more rows.
    public var commitRows: Int = Self.defaultCommitRows
    /// The default of ``commitRows``: some dozens of an import's saves, more than gather while a commit is applied,
    /// so that the saves in flight rather than this budget bound a commit (see docs/benchmarks.md, 'Import').
    public static let defaultCommitRows = 150_000
    /// The longest a group commit should take, in seconds: fewer rows than ``commitRows`` go into one when the
    /// writer's recent pace says they would take longer (every save in a commit waits for all of it). nil or 0 sets
    /// no time budget.
    public var commitSeconds: Double? = Self.defaultCommitSeconds
    /// The default of ``commitSeconds``: long enough that an import's commits are bound by the saves in flight,
    /// short enough that a save's answer does not wait long behind other workers' rows (see docs/benchmarks.md,
    /// 'Import').
    public static let defaultCommitSeconds: Double? = 1
    /// CURVE encryption and the allow-list of peers' keys; nil serves plain TCP (loopback only, unless insecure).
    public var curve: CoordinatorCurve?
    /// The bounds on what peers send.
    public var limits = CoordinatorLimits()
    /// Most jobs of a kind or queue running at once, across every worker (`--limit`).
    public var runLimits = RunLimits()
    /// Where `tributary backup` writes (a backup's path is relative to it, or absolute inside it); nil: the store's
    /// directory.
    public var backupDirectory: String?
    /// How often the feed publishes a heartbeat carrying the last sequence number.
    public var feedHeartbeatInterval: Duration = .milliseconds(500)
    /// The cluster this coordinator is a member of (``ClusterNode``); nil runs it alone.
    public var cluster: ClusterSettings?

    /// A configuration for the store at `storePath` with `model`, everything else as its defaults above.
    public init(storePath: String, model: Model) {
        self.storePath = storePath
        self.model = model
    }
}

/// A coordinator configuration that cannot work, with a message saying what to change.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    /// What is wrong, and what to change.
    public let message: String

    /// An error saying `message`.
    public init(message: String) {
        self.message = message
    }

    public var description: String { message }
}
