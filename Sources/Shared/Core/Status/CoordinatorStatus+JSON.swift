import Foundation

/// The coordinator's status as JSON (`tributary status --json`, the HTTP API's `/api/status`): every field, under
/// the protocol's lowerCamelCase names (`StatusReply` in docs/protocol.md). Absent values are written as the protocol
/// writes them: `currentJobId` 0 for an idle worker, `periodSeconds` 0 for a concurrency limit; `cluster` null for a
/// coordinator alone; running jobs are written as ``JobJSON`` writes a job.
extension CoordinatorStatus: Encodable {
    enum CodingKeys: String, CodingKey {
        case workers, jobs, lastSeq, oldestHistorySeq, storePath, storeUnwritable, storeUnwritableSeconds, pool
        case running, limits, queues, cluster
    }

    /// Writes every field under its key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(workers, forKey: .workers)
        try container.encode(jobs, forKey: .jobs)
        try container.encode(lastSeq, forKey: .lastSeq)
        try container.encode(oldestHistorySeq, forKey: .oldestHistorySeq)
        try container.encode(storePath, forKey: .storePath)
        try container.encode(storeUnwritable ?? "", forKey: .storeUnwritable)
        try container.encode(storeUnwritableSeconds, forKey: .storeUnwritableSeconds)
        try container.encode(pool, forKey: .pool)
        try container.encode(running, forKey: .running)
        try container.encode(limits, forKey: .limits)
        try container.encode(queues, forKey: .queues)
        // null for a coordinator alone, whose reply leaves the message unset.
        try container.encode(cluster, forKey: .cluster)
    }
}

extension ClusterStatus: Encodable {
    enum CodingKeys: String, CodingKey {
        case cluster, node, epoch, asynchronous, lastRecord, standbys, heldWrites, writesBlocked
    }

    /// Writes every field under its key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(cluster, forKey: .cluster)
        try container.encode(node, forKey: .node)
        try container.encode(epoch, forKey: .epoch)
        try container.encode(asynchronous, forKey: .asynchronous)
        try container.encode(lastRecord, forKey: .lastRecord)
        try container.encode(standbys, forKey: .standbys)
        try container.encode(heldWrites, forKey: .heldWrites)
        try container.encode(writesBlocked, forKey: .writesBlocked)
    }
}

extension ClusterStatus.Standby: Encodable {
    enum CodingKeys: String, CodingKey {
        case name, acknowledged, inSync, lagRecords, connected
    }

    /// Writes every field under its key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(acknowledged, forKey: .acknowledged)
        try container.encode(inSync, forKey: .inSync)
        try container.encode(lagRecords, forKey: .lagRecords)
        try container.encode(connected, forKey: .connected)
    }
}

extension CoordinatorStatus.Worker: Encodable {
    enum CodingKeys: String, CodingKey {
        case id = "workerId"
        case name, pid, state, secondsSinceHeartbeat, freeSlots
        case currentJobID = "currentJobId"
    }

    /// Writes every field under its key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(pid, forKey: .pid)
        try container.encode(state.rawValue, forKey: .state)
        try container.encode(secondsSinceHeartbeat, forKey: .secondsSinceHeartbeat)
        try container.encode(currentJobID ?? 0, forKey: .currentJobID)
        try container.encode(freeSlots, forKey: .freeSlots)
    }
}

extension CoordinatorStatus.PoolProcess: Encodable {
    enum CodingKeys: String, CodingKey {
        case name, pid, restarts, lastExitStatus, crashLooping
    }

    /// Writes every field under its key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(pid, forKey: .pid)
        try container.encode(restarts, forKey: .restarts)
        try container.encode(lastExitStatus, forKey: .lastExitStatus)
        try container.encode(crashLooping, forKey: .crashLooping)
    }
}

extension CoordinatorStatus.Limit: Encodable {
    enum CodingKeys: String, CodingKey {
        case target, limit, running, periodSeconds
    }

    /// `target` is the limit's ``name`` (`kind:export/customer`).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .target)
        try container.encode(limit, forKey: .limit)
        try container.encode(running, forKey: .running)
        try container.encode(periodSeconds ?? 0, forKey: .periodSeconds)
    }
}

extension CoordinatorStatus.Queue: Encodable {
    enum CodingKeys: String, CodingKey {
        case name, queued, latencySeconds, paused
    }

    /// Writes every field under its key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(queued, forKey: .queued)
        try container.encode(latencySeconds, forKey: .latencySeconds)
        try container.encode(paused, forKey: .paused)
    }
}

/// Counts by state: a key for every state, 0 included (`{"waiting": 0, "queued": 12, …}`).
extension JobCounts: Encodable {
    /// Writes each state's count under the state's name.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JobStateKey.self)
        for state in JobState.allCases { try container.encode(self[state], forKey: JobStateKey(state)) }
    }

    private struct JobStateKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }

        init(_ state: JobState) { stringValue = state.rawValue }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
