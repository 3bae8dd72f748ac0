/// What `tributary status` shows of a coordinator: its workers and local pool, its jobs by state and those running,
/// its concurrency and rate limits, its queues, and where its store and feed stand.
public struct CoordinatorStatus: Sendable, Equatable {
    /// A worker connected to the coordinator.
    public struct Worker: Sendable, Equatable {
        /// The id it registered with.
        public var id: String
        /// The human name it announced (`tributary-worker --name`).
        public var name: String
        /// Its process id on its own host, as it announced it.
        public var pid: Int32
        /// Whether it runs any job.
        public var state: WorkerState
        /// How long ago the coordinator last heard from it.
        public var secondsSinceHeartbeat: Double
        /// The lowest id of the jobs it runs; nil while idle.
        public var currentJobID: Int64?
        /// How many more jobs it has asked for and may be sent now (its credit not taken by a claim in flight).
        public var freeSlots: Int

        /// A worker as the coordinator sees it.
        public init(
            id: String, name: String, pid: Int32, state: WorkerState, secondsSinceHeartbeat: Double,
            currentJobID: Int64?, freeSlots: Int = 0
        ) {
            self.id = id
            self.name = name
            self.pid = pid
            self.state = state
            self.secondsSinceHeartbeat = secondsSinceHeartbeat
            self.currentJobID = currentJobID
            self.freeSlots = freeSlots
        }
    }

    /// One of the coordinator's local worker processes (`--workers`).
    public struct PoolProcess: Sendable, Equatable {
        /// `pool-1`, `pool-2`, …
        public var name: String
        /// 0 while it waits to be started again.
        public var pid: Int32
        /// How many times it exited and was started again.
        public var restarts: Int
        /// The exit status of its last run; 0 before it first exited.
        public var lastExitStatus: Int32
        /// Its last 3 runs each ended within 10 s.
        public var crashLooping: Bool

        /// A pool process as the coordinator's supervisor sees it.
        public init(name: String, pid: Int32, restarts: Int, lastExitStatus: Int32, crashLooping: Bool) {
            self.name = name
            self.pid = pid
            self.restarts = restarts
            self.lastExitStatus = lastExitStatus
            self.crashLooping = crashLooping
        }
    }

    /// A concurrency or rate limit of the coordinator (`--limit`, `--rate-limit`) and what runs under it.
    public struct Limit: Sendable, Equatable {
        /// The jobs it applies to: of a kind, or of a queue.
        public var target: RunLimits.Target
        /// For a limit per value of an argument (`kind:export/customer=2`), that argument.
        public var argument: String?
        /// Most jobs running at once, or (a rate limit) started in any ``periodSeconds``.
        public var limit: Int
        /// Jobs running under it now (per argument: under its busiest value); 0 for a rate limit.
        public var running: UInt64
        /// A rate limit's period in seconds; nil for a concurrency limit.
        public var periodSeconds: Double?

        /// A limit and what runs under it.
        public init(
            target: RunLimits.Target, argument: String? = nil, limit: Int, running: UInt64, periodSeconds: Double?
        ) {
            self.target = target
            self.argument = argument
            self.limit = limit
            self.running = running
            self.periodSeconds = periodSeconds
        }

        /// As `--limit` names it: `kind:NAME`, `queue:NAME`, or with `/ARGUMENT` for a limit per value.
        public var name: String { target.description + (argument.map { "/\($0)" } ?? "") }
    }

    /// A named queue with jobs waiting in it, or paused.
    public struct Queue: Sendable, Equatable {
        /// The queue's name.
        public var name: String
        /// Jobs waiting in it, retries and delayed jobs included.
        public var queued: UInt64
        /// How long the job at the head of the queue has waited, in seconds (see docs/jobs.md); 0 when none is due.
        public var latencySeconds: Double
        /// Whether it is paused: none of its jobs is claimed until it is resumed.
        public var paused: Bool

        /// A queue, how long it is, and whether it is paused.
        public init(name: String, queued: UInt64, latencySeconds: Double, paused: Bool = false) {
            self.name = name
            self.queued = queued
            self.latencySeconds = latencySeconds
            self.paused = paused
        }
    }

    /// The connected workers.
    public var workers: [Worker] = []
    /// The jobs in each state.
    public var jobs = JobCounts()
    /// The store's last commit.
    public var lastSeq: UInt64 = 0
    /// The oldest commit the history keeps (commits before it were pruned).
    public var oldestHistorySeq: UInt64 = 0
    /// The store's file on the coordinator's host.
    public var storePath: String = ""
    /// Why the store cannot be written now (its disk is full, its filesystem read-only); nil while it can.
    public var storeUnwritable: String?
    /// How long the store has not been writable, in seconds; 0 while it is.
    public var storeUnwritableSeconds: Double = 0
    /// The coordinator's local worker processes.
    public var pool: [PoolProcess] = []
    /// Running jobs with their progress (at most 50), without their error histories.
    public var running: [JobInfo] = []
    /// The coordinator's concurrency and rate limits.
    public var limits: [Limit] = []
    /// Each queue with waiting jobs, by name.
    public var queues: [Queue] = []
    /// The cluster this coordinator is the primary of; nil for a coordinator alone.
    public var cluster: ClusterStatus?

    /// A status with nothing in it, to fill in.
    public init() {}
}
