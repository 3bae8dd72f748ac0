import TributaryProtocol

// The conversions between the coordinator's status and its `StatusReply` (docs/protocol.md).

extension CoordinatorStatus {
    /// The status a `StatusReply` carries, checked.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming a worker state, job state or limit target this version
    ///   does not know.
    public init(_ wire: Tributary_V1_StatusReply) throws {
        self.init()
        workers = try wire.workers.map(Worker.init)
        jobs = JobCounts(wire.jobs)
        lastSeq = wire.lastSeq
        oldestHistorySeq = wire.oldestHistorySeq
        storePath = wire.storePath
        storeUnwritable = wire.storeUnwritable.isEmpty ? nil : wire.storeUnwritable
        storeUnwritableSeconds = wire.storeUnwritableSeconds
        pool = wire.pool.map(PoolProcess.init)
        running = try wire.running.map(JobInfo.init)
        limits = try wire.limits.map(Limit.init)
        queues = wire.queues.map(Queue.init)
        cluster = wire.hasCluster ? ClusterStatus(wire.cluster) : nil
    }

    /// As `StatusReply` carries it.
    public var wire: Tributary_V1_StatusReply {
        Tributary_V1_StatusReply.with {
            $0.workers = workers.map(\.wire)
            $0.jobs = jobs.wire
            $0.lastSeq = lastSeq
            $0.oldestHistorySeq = oldestHistorySeq
            $0.storePath = storePath
            $0.storeUnwritable = storeUnwritable ?? ""
            $0.storeUnwritableSeconds = storeUnwritableSeconds
            $0.pool = pool.map(\.wire)
            $0.running = running.map(\.wire)
            $0.limits = limits.map(\.wire)
            $0.queues = queues.map(\.wire)
            if let cluster { $0.cluster = cluster.wire }
        }
    }
}

extension ClusterStatus {
    /// The cluster a `ClusterInfo` carries.
    public init(_ wire: Tributary_V1_ClusterInfo) {
        self.init(
            cluster: wire.cluster, node: wire.node, epoch: wire.epoch, asynchronous: wire.asynchronous,
            lastRecord: wire.lastRecord,
            standbys: wire.standbys.map {
                Standby(
                    name: $0.name, acknowledged: $0.acknowledged, inSync: $0.inSync, lagRecords: $0.lagRecords,
                    connected: $0.connected)
            }, heldWrites: wire.heldWrites, writesBlocked: wire.writesBlocked)
    }

    /// As `ClusterInfo` carries it.
    public var wire: Tributary_V1_ClusterInfo {
        Tributary_V1_ClusterInfo.with {
            $0.cluster = cluster
            $0.node = node
            $0.epoch = epoch
            $0.asynchronous = asynchronous
            $0.lastRecord = lastRecord
            $0.standbys = standbys.map { standby in
                Tributary_V1_StandbyInfo.with {
                    $0.name = standby.name
                    $0.acknowledged = standby.acknowledged
                    $0.inSync = standby.inSync
                    $0.lagRecords = standby.lagRecords
                    $0.connected = standby.connected
                }
            }
            $0.heldWrites = heldWrites
            $0.writesBlocked = writesBlocked
        }
    }
}

extension CoordinatorStatus.Worker {
    /// The worker a `WorkerInfo` carries.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming a state this version does not know.
    public init(_ wire: Tributary_V1_WorkerInfo) throws {
        self.init(
            id: wire.workerID, name: wire.name, pid: wire.pid, state: try WorkerState(wire: wire.state),
            secondsSinceHeartbeat: wire.secondsSinceHeartbeat,
            currentJobID: wire.currentJobID == 0 ? nil : Int64(clamping: wire.currentJobID),
            freeSlots: Int(wire.freeSlots))
    }

    /// As `WorkerInfo` carries it.
    public var wire: Tributary_V1_WorkerInfo {
        Tributary_V1_WorkerInfo.with {
            $0.workerID = id
            $0.name = name
            $0.pid = pid
            $0.state = state.rawValue
            $0.secondsSinceHeartbeat = secondsSinceHeartbeat
            $0.currentJobID = UInt64(max(0, currentJobID ?? 0))
            $0.freeSlots = UInt32(clamping: freeSlots)
        }
    }
}

extension CoordinatorStatus.PoolProcess {
    /// The process a `PoolProcess` message carries.
    public init(_ wire: Tributary_V1_PoolProcess) {
        self.init(
            name: wire.name, pid: wire.pid, restarts: Int(wire.restarts), lastExitStatus: wire.lastExitStatus,
            crashLooping: wire.crashLooping)
    }

    /// As `StatusReply` carries it.
    public var wire: Tributary_V1_PoolProcess {
        Tributary_V1_PoolProcess.with {
            $0.name = name
            $0.pid = pid
            $0.restarts = UInt32(clamping: restarts)
            $0.lastExitStatus = lastExitStatus
            $0.crashLooping = crashLooping
        }
    }
}

extension CoordinatorStatus.Limit {
    /// The limit a `RunLimitInfo` carries: its target `kind:NAME` or `queue:NAME`, with `/ARGUMENT` for a limit per
    /// value of an argument.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming a target that is neither.
    public init(_ wire: Tributary_V1_RunLimitInfo) throws {
        var name = Substring(wire.target)
        var argument: String?
        if let slash = name.firstIndex(of: "/") {
            argument = String(name[name.index(after: slash)...])
            name = name[..<slash]
        }
        let target: RunLimits.Target
        if name.hasPrefix("kind:"), name.count > 5 {
            target = .kind(String(name.dropFirst(5)))
        } else if name.hasPrefix("queue:"), name.count > 6 {
            target = .queue(String(name.dropFirst(6)))
        } else {
            throw ProtocolError(
                .invalidRequest, "unknown limit target '\(wire.target)' (kind:NAME or queue:NAME, with /ARGUMENT)")
        }
        guard argument?.isEmpty != true else {
            throw ProtocolError(.invalidRequest, "limit target '\(wire.target)' names no argument after '/'")
        }
        self.init(
            target: target, argument: argument, limit: Int(wire.limit), running: wire.running,
            periodSeconds: wire.periodSeconds == 0 ? nil : wire.periodSeconds)
    }

    /// As `RunLimitInfo` carries it.
    public var wire: Tributary_V1_RunLimitInfo {
        Tributary_V1_RunLimitInfo.with {
            $0.target = name
            $0.limit = UInt32(clamping: limit)
            $0.running = running
            $0.periodSeconds = periodSeconds ?? 0
        }
    }
}

extension CoordinatorStatus.Queue {
    /// The queue a `QueueInfo` carries.
    public init(_ wire: Tributary_V1_QueueInfo) {
        self.init(name: wire.name, queued: wire.queued, latencySeconds: wire.latencySeconds, paused: wire.paused)
    }

    /// As `QueueInfo` carries it.
    public var wire: Tributary_V1_QueueInfo {
        Tributary_V1_QueueInfo.with {
            $0.name = name
            $0.queued = queued
            $0.latencySeconds = latencySeconds
            $0.paused = paused
        }
    }
}

extension WorkerState {
    /// The state the wire names (`"idle"` or `"busy"`).
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming the states this version knows.
    public init(wire name: String) throws {
        guard let state = WorkerState(rawValue: name) else {
            throw ProtocolError(
                .invalidRequest, "unknown worker state '\(name)' (one of \(WorkerState.names.joined(separator: ", ")))")
        }
        self = state
    }
}

extension JobCounts {
    /// The counts a `StatusReply` carries.
    public init(_ wire: Tributary_V1_JobCounts) {
        self.init([
            .waiting: wire.waiting, .queued: wire.queued, .running: wire.running, .done: wire.done,
            .dead: wire.dead, .cancelled: wire.cancelled,
        ])
    }

    /// As `StatusReply` carries them.
    public var wire: Tributary_V1_JobCounts {
        Tributary_V1_JobCounts.with {
            $0.waiting = self[.waiting]
            $0.queued = self[.queued]
            $0.running = self[.running]
            $0.done = self[.done]
            $0.dead = self[.dead]
            $0.cancelled = self[.cancelled]
        }
    }
}
