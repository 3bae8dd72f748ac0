import Foundation
import TributaryCore
import TributaryMessaging
import TributaryProtocol

/// Pushes jobs and asks the coordinator how they are doing.
///
/// ```swift
/// let client = try JobClient(endpoint: "tcp://127.0.0.1:7400")
/// let pushed = try await client.push([ImportJob.spec(entity: "User", payload: rows, rows: 2)])
/// let status = try await client.batchStatus(pushed.batch)
/// ```
public final class JobClient: Sendable {
    let connection: CoordinatorConnection

    /// Connects to the coordinator's jobs/control endpoint (with `curve` keys for a coordinator that runs with
    /// CURVE; nil takes them from the environment, else connects without).
    public init(endpoint: String, curve: CurveClientKeys? = nil) throws {
        connection = try CoordinatorConnection(endpoint: endpoint, curve: curve)
    }

    /// Runs `body` with a client connected to `endpoint`, and closes it afterwards, also when `body` throws.
    public static func with<T: Sendable>(
        endpoint: String, curve: CurveClientKeys? = nil, _ body: (JobClient) async throws -> T
    ) async throws -> T {
        let client = try JobClient(endpoint: endpoint, curve: curve)
        do {
            let value = try await body(client)
            await client.close()
            return value
        } catch {
            await client.close()
            throw error
        }
    }

    /// The endpoint this client talks to.
    public var endpoint: String { connection.endpoint }

    /// Enqueues jobs as one batch.
    /// - Returns: the batch name and the jobs' ids.
    /// - Throws: ``ProtocolError`` naming the problem (unknown entity, payload too large, ...).
    public func push(_ jobs: [Tributary_V1_JobSpec], batch: String = "", onComplete: Tributary_V1_JobSpec? = nil)
        async throws -> Tributary_V1_PushReply
    {
        let push = Tributary_V1_PushJobs.with {
            $0.jobs = jobs
            $0.batch = batch
            if let onComplete { $0.onComplete = onComplete }
        }
        let reply = try await connection.request(.pushJobs(push), timeout: .seconds(60))
        guard case .pushReply(let pushed) = reply.body else { throw Self.unexpected(reply) }
        return pushed
    }

    /// Workers, jobs by state and the last sequence number.
    public func status() async throws -> Tributary_V1_StatusReply {
        let reply = try await connection.request(.statusRequest(.init()))
        guard case .statusReply(let status) = reply.body else { throw Self.unexpected(reply) }
        return status
    }

    /// Progress of a batch of jobs.
    public func batchStatus(_ batch: String) async throws -> Tributary_V1_BatchStatusReply {
        let reply = try await connection.request(.batchStatusRequest(.with { $0.batch = batch }))
        guard case .batchStatusReply(let status) = reply.body else { throw Self.unexpected(reply) }
        return status
    }

    /// Polls a batch until every job is done or dead, reporting each answer to `progress`.
    public func waitForBatch(
        _ batch: String, every interval: Duration = .milliseconds(200),
        progress: (Tributary_V1_BatchStatusReply) -> Void = { _ in }
    ) async throws -> Tributary_V1_BatchStatusReply {
        while true {
            let status = try await batchStatus(batch)
            progress(status)
            if status.doneJobs + status.deadJobs + status.cancelledJobs >= status.totalJobs { return status }
            try await Task.sleep(for: interval)
        }
    }

    /// Jobs, newest first, optionally of one state or batch.
    /// - Throws: ``ProtocolError`` naming what the coordinator refused.
    public func jobs(state: JobState? = nil, batch: String? = nil, limit: Int = 50) async throws -> [JobInfo] {
        let request = Tributary_V1_JobsRequest.with {
            $0.state = state?.rawValue ?? ""
            $0.batch = batch ?? ""
            $0.limit = UInt32(clamping: limit)
        }
        let reply = try await connection.request(.jobsRequest(request))
        guard case .jobsReply(let jobs) = reply.body else { throw Self.unexpected(reply) }
        return try jobs.jobs.map(JobInfo.init)
    }

    /// One job, with its error history.
    public func job(_ id: UInt64) async throws -> JobInfo {
        let reply = try await connection.request(.jobRequest(.with { $0.jobID = id }))
        guard case .jobInfo(let job) = reply.body else { throw Self.unexpected(reply) }
        return try JobInfo(job)
    }

    /// Cancels a waiting, queued or running job.
    public func cancel(_ id: UInt64) async throws -> JobInfo {
        let reply = try await connection.request(.cancelJobRequest(.with { $0.jobID = id }))
        guard case .jobInfo(let job) = reply.body else { throw Self.unexpected(reply) }
        return try JobInfo(job)
    }

    /// Deletes a finished job (done, dead or cancelled) and its payload.
    public func delete(_ id: UInt64) async throws -> JobInfo {
        let reply = try await connection.request(.deleteJobRequest(.with { $0.jobID = id }))
        guard case .jobInfo(let job) = reply.body else { throw Self.unexpected(reply) }
        return try JobInfo(job)
    }

    /// Puts a dead job back in the queue with its attempts reset.
    public func retry(_ id: UInt64) async throws -> JobInfo {
        let reply = try await connection.request(.retryJobRequest(.with { $0.jobID = id }))
        guard case .jobInfo(let job) = reply.body else { throw Self.unexpected(reply) }
        return try JobInfo(job)
    }

    /// Adds a schedule (periodic job), or replaces the one of its name when `replace`.
    public func putSchedule(_ schedule: Tributary_V1_ScheduleSpec, replace: Bool = false) async throws
        -> Tributary_V1_ScheduleInfo
    {
        let request = Tributary_V1_PutScheduleRequest.with {
            $0.schedule = schedule
            $0.replace = replace
        }
        let reply = try await connection.request(.putScheduleRequest(request))
        guard case .scheduleInfo(let info) = reply.body else { throw Self.unexpected(reply) }
        return info
    }

    /// Every schedule, by name.
    public func schedules() async throws -> [Tributary_V1_ScheduleInfo] {
        let reply = try await connection.request(.schedulesRequest(.init()))
        guard case .schedulesReply(let schedules) = reply.body else { throw Self.unexpected(reply) }
        return schedules.schedules
    }

    /// Pauses, resumes or deletes a schedule (`action`: "pause", "resume" or "delete").
    public func schedule(_ name: String, action: String) async throws -> Tributary_V1_ScheduleInfo {
        let request = Tributary_V1_ScheduleActionRequest.with {
            $0.name = name
            $0.action = action
        }
        let reply = try await connection.request(.scheduleActionRequest(request))
        guard case .scheduleInfo(let info) = reply.body else { throw Self.unexpected(reply) }
        return info
    }

    /// Has the coordinator write an online backup of its store to `path` on its host (relative to its backup
    /// directory, or absolute inside it); returns once the file is complete.
    public func backup(to path: String, timeout: Duration = .seconds(600)) async throws -> Tributary_V1_BackupReply {
        let reply = try await connection.request(.backupRequest(.with { $0.path = path }), timeout: timeout)
        guard case .backupReply(let backup) = reply.body else { throw Self.unexpected(reply) }
        return backup
    }

    /// Closes the connection, sending what is queued first.
    public func close() async {
        await connection.close()
    }

    static func unexpected(_ reply: Tributary_V1_Envelope) -> ProtocolError {
        ProtocolError(
            .unknownMessage, "unexpected reply from the coordinator: \(reply.body.map { "\($0)" } ?? "empty")")
    }
}
