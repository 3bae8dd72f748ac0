import Foundation
import TributaryProtocol

// The conversions between the jobs' domain types and their messages on the wire (docs/protocol.md).

extension JobSpec {
    /// The spec a `PushJobs` or `JobAssignment` carries.
    public init(_ wire: Tributary_V1_JobSpec) {
        self.init(
            kind: wire.kind, payload: wire.payload, arguments: wire.arguments, total: wire.total,
            maxAttempts: wire.maxAttempts, backoffBase: .milliseconds(Int64(wire.backoffBaseMs)),
            backoffCap: .milliseconds(Int64(wire.backoffCapMs)), priority: wire.priority,
            runAt: wire.runAt == 0 ? nil : Date(timeIntervalSince1970: wire.runAt),
            uniqueKey: wire.uniqueKey.isEmpty ? nil : wire.uniqueKey,
            timeout: wire.timeoutMs == 0 ? nil : .milliseconds(Int64(wire.timeoutMs)),
            queue: wire.queue.isEmpty ? JobQueue.defaultName : wire.queue)
        afterJobs = wire.afterJobs.map { Int64(clamping: $0) }
        afterBatches = wire.afterBatches
        afterPushed = wire.afterPushed.map { Int($0) }
    }

    /// The spec of a `PushJobs`, checked: its `on_parent_failure` is a known policy.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming an unknown policy.
    public init(checking wire: Tributary_V1_JobSpec) throws {
        self.init(wire)
        guard let policy = wire.onParentFailure.isEmpty ? .fail : ParentFailure(rawValue: wire.onParentFailure)
        else {
            throw ProtocolError(
                .invalidRequest,
                "unknown on_parent_failure '\(wire.onParentFailure)' (one of \(ParentFailure.names.joined(separator: ", ")))"
            )
        }
        onParentFailure = policy
    }

    /// As `PushJobs` and `JobAssignment` carry it.
    public var wire: Tributary_V1_JobSpec {
        Tributary_V1_JobSpec.with {
            $0.kind = kind
            $0.payload = payload
            $0.arguments = arguments
            $0.total = total
            $0.maxAttempts = maxAttempts
            $0.backoffBaseMs = UInt32(clamping: max(0, backoffBase.wholeMilliseconds))
            $0.backoffCapMs = UInt32(clamping: max(0, backoffCap.wholeMilliseconds))
            $0.priority = priority
            $0.runAt = runAt?.timeIntervalSince1970 ?? 0
            $0.uniqueKey = uniqueKey ?? ""
            $0.timeoutMs = UInt32(clamping: max(0, timeout?.wholeMilliseconds ?? 0))
            $0.queue = queue == JobQueue.defaultName ? "" : queue
            $0.afterJobs = afterJobs.map { UInt64(max(0, $0)) }
            $0.afterBatches = afterBatches
            $0.afterPushed = afterPushed.map { UInt32(clamping: $0) }
            $0.onParentFailure = onParentFailure == .fail ? "" : onParentFailure.rawValue
        }
    }
}

extension ScheduleSpec {
    /// The spec a `PutScheduleRequest` carries, checked.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming a bad name, cron expression, time zone or missed-tick
    ///   policy.
    public init(checking wire: Tributary_V1_ScheduleSpec) throws {
        if let refusal = ScheduleSpec.refusal(ofName: wire.name) { throw ProtocolError(.invalidRequest, refusal) }
        guard let missed = wire.missed.isEmpty ? .once : MissedTicks(rawValue: wire.missed) else {
            throw ProtocolError(
                .invalidRequest,
                "unknown missed-tick policy '\(wire.missed)' (one of \(MissedTicks.names.joined(separator: ", ")))")
        }
        guard !wire.job.kind.isEmpty else {
            throw ProtocolError(.invalidRequest, "schedule '\(wire.name)' names no job kind")
        }
        self.init(
            name: wire.name, cron: wire.cron, timeZone: wire.timezone, missed: missed, job: JobSpec(wire.job))
        do {
            _ = try cronSchedule()
        } catch let error as CronError {
            throw ProtocolError(.invalidRequest, "schedule '\(wire.name)': \(error.description)")
        }
    }

    /// As `PutScheduleRequest` carries it.
    public var wire: Tributary_V1_ScheduleSpec {
        Tributary_V1_ScheduleSpec.with {
            $0.name = name
            $0.cron = cron
            $0.timezone = timeZone
            $0.missed = missed.rawValue
            $0.job = job.wire
        }
    }
}

extension ScheduleInfo {
    /// The schedule a `ScheduleInfo` message carries.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` when the coordinator sent a schedule this version cannot read.
    public init(_ wire: Tributary_V1_ScheduleInfo) throws {
        self.init(
            spec: try ScheduleSpec(checking: wire.schedule), paused: wire.paused, nextTick: wire.nextTick,
            lastTick: wire.lastTick == 0 ? nil : wire.lastTick,
            lastJobID: wire.lastJobID == 0 ? nil : Int64(clamping: wire.lastJobID), fired: Int64(clamping: wire.fired),
            skipped: Int64(clamping: wire.skipped))
    }

    /// As `ScheduleInfo` carries it.
    public var wire: Tributary_V1_ScheduleInfo {
        Tributary_V1_ScheduleInfo.with {
            $0.schedule = spec.wire
            $0.paused = paused
            $0.nextTick = nextTick
            $0.lastTick = lastTick ?? 0
            $0.lastJobID = UInt64(max(0, lastJobID ?? 0))
            $0.fired = UInt64(max(0, fired))
            $0.skipped = UInt64(max(0, skipped))
        }
    }
}

extension ScheduleAction {
    /// The action a `ScheduleActionRequest` names.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming the actions this version knows.
    public init(wire name: String) throws {
        guard let action = ScheduleAction(rawValue: name) else {
            throw ProtocolError(
                .invalidRequest,
                "unknown schedule action '\(name)' (one of \(ScheduleAction.names.joined(separator: ", ")))")
        }
        self = action
    }
}

extension JobInfo {
    /// The job a `JobInfo` reply carries.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` when the coordinator sent a state or policy this version does
    ///   not know.
    public init(_ wire: Tributary_V1_JobInfo) throws {
        self.init(
            id: Int64(clamping: wire.jobID), batch: wire.batch, kind: wire.kind, state: try JobState(wire: wire.state),
            attempt: Int(wire.attempt), maxAttempts: Int(wire.maxAttempts), done: wire.done, total: wire.total,
            worker: wire.workerID.isEmpty ? nil : wire.workerID,
            runAt: wire.runAt == 0 ? nil : Date(timeIntervalSince1970: wire.runAt),
            createdAt: Date(timeIntervalSince1970: wire.createdAt),
            updatedAt: Date(timeIntervalSince1970: wire.updatedAt), arguments: wire.arguments,
            errors: wire.errors.map { JobError(attempt: Int($0.attempt), at: $0.at, message: $0.message) },
            queue: wire.queue.isEmpty ? JobQueue.defaultName : wire.queue)
        if wire.hasAttemptsCounted { attemptsCounted = Int(wire.attemptsCounted) }
        afterJobs = wire.afterJobs.map { Int64(clamping: $0) }
        afterBatches = wire.afterBatches
        if !wire.onParentFailure.isEmpty {
            guard let policy = ParentFailure(rawValue: wire.onParentFailure) else {
                throw ProtocolError(.invalidRequest, "unknown on_parent_failure '\(wire.onParentFailure)'")
            }
            onParentFailure = policy
        }
        schedule = wire.schedule.isEmpty ? nil : wire.schedule
        tick = wire.schedule.isEmpty ? nil : wire.tick
        waiting = wire.waiting.isEmpty ? nil : wire.waiting
    }

    /// As a `JobInfo` reply carries it.
    public var wire: Tributary_V1_JobInfo {
        Tributary_V1_JobInfo.with {
            $0.jobID = UInt64(max(0, id))
            $0.batch = batch
            $0.kind = kind
            $0.state = state.rawValue
            $0.attempt = UInt32(clamping: attempt)
            $0.maxAttempts = UInt32(clamping: maxAttempts)
            $0.attemptsCounted = UInt32(clamping: attemptsCounted)
            $0.done = done
            $0.total = total
            $0.workerID = worker ?? ""
            $0.runAt = runAt?.timeIntervalSince1970 ?? 0
            $0.createdAt = createdAt.timeIntervalSince1970
            $0.updatedAt = updatedAt.timeIntervalSince1970
            $0.arguments = arguments
            $0.queue = queue
            $0.afterJobs = afterJobs.map { UInt64(max(0, $0)) }
            $0.afterBatches = afterBatches
            $0.onParentFailure = hasParents ? onParentFailure.rawValue : ""
            $0.schedule = schedule ?? ""
            $0.tick = tick ?? 0
            $0.waiting = waiting ?? ""
            $0.errors = errors.map { error in
                Tributary_V1_JobError.with {
                    $0.attempt = UInt32(clamping: error.attempt)
                    $0.at = error.at
                    $0.message = error.message
                }
            }
        }
    }
}

extension JobProgress {
    /// As the `$jobs` topic carries it.
    public var wire: Tributary_V1_JobProgress {
        Tributary_V1_JobProgress.with {
            $0.jobID = UInt64(max(0, id))
            $0.batch = batch
            $0.state = state.rawValue
            $0.done = done
            $0.total = total
            $0.attempt = UInt32(clamping: attempt)
        }
    }
}

extension JobState {
    /// The state the wire names (`"queued"`, `"running"`, …).
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming the states this version knows.
    public init(wire name: String) throws {
        guard let state = JobState(rawValue: name) else {
            throw ProtocolError(
                .invalidRequest, "unknown job state '\(name)' (one of \(JobState.names.joined(separator: ", ")))")
        }
        self = state
    }
}

extension [JobState: UInt64] {
    /// Jobs by state, as `StatusReply` counts them.
    public var wire: Tributary_V1_JobCounts {
        Tributary_V1_JobCounts.with {
            $0.queued = self[.queued] ?? 0
            $0.running = self[.running] ?? 0
            $0.done = self[.done] ?? 0
            $0.dead = self[.dead] ?? 0
            $0.cancelled = self[.cancelled] ?? 0
            $0.waiting = self[.waiting] ?? 0
        }
    }
}
