import Foundation
import TributaryProtocol

/// What the CLI's `--json` flags print: every field of the reply, zero and empty ones included (protobuf's JSON
/// mapping leaves those out, and a client should not have to guess that a missing `dead` means 0). Keys are the
/// protobuf JSON names (lowerCamelCase); integers are numbers; times are seconds since 1970.
public enum JSONOutput {
    /// `tributary status --json`.
    public static func status(_ reply: Tributary_V1_StatusReply) throws -> String {
        try encode(StatusJSON(reply))
    }

    /// `tributary jobs list --json`: `{"jobs": [...]}`.
    public static func jobs(_ jobs: [Tributary_V1_JobInfo]) throws -> String {
        try encode(["jobs": jobs.map(JobJSON.init)])
    }

    /// `tributary jobs show ID --json`.
    public static func job(_ job: Tributary_V1_JobInfo) throws -> String {
        try encode(JobJSON(job))
    }

    private static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

struct StatusJSON: Encodable {
    struct Worker: Encodable {
        let workerId: String
        let name: String
        let pid: Int32
        let state: String
        let secondsSinceHeartbeat: Double
        let currentJobId: UInt64
    }

    struct Counts: Encodable {
        let queued, running, done, dead, cancelled: UInt64
    }

    struct PoolProcess: Encodable {
        let name: String
        let pid: Int32
        let restarts: UInt32
        let lastExitStatus: Int32
        let crashLooping: Bool
    }

    let workers: [Worker]
    let jobs: Counts
    let lastSeq: UInt64
    let oldestHistorySeq: UInt64
    let storePath: String
    let pool: [PoolProcess]
    let running: [JobJSON]

    init(_ reply: Tributary_V1_StatusReply) {
        workers = reply.workers.map {
            Worker(
                workerId: $0.workerID, name: $0.name, pid: $0.pid, state: $0.state,
                secondsSinceHeartbeat: $0.secondsSinceHeartbeat, currentJobId: $0.currentJobID)
        }
        let counts = reply.jobs
        jobs = Counts(
            queued: counts.queued, running: counts.running, done: counts.done, dead: counts.dead,
            cancelled: counts.cancelled)
        lastSeq = reply.lastSeq
        oldestHistorySeq = reply.oldestHistorySeq
        storePath = reply.storePath
        pool = reply.pool.map {
            PoolProcess(
                name: $0.name, pid: $0.pid, restarts: $0.restarts, lastExitStatus: $0.lastExitStatus,
                crashLooping: $0.crashLooping)
        }
        running = reply.running.map(JobJSON.init)
    }
}

struct JobJSON: Encodable {
    struct Failure: Encodable {
        let attempt: UInt32
        let at: Double
        let message: String
    }

    let jobId: UInt64
    let batch: String
    let kind: String
    let state: String
    let attempt: UInt32
    let maxAttempts: UInt32
    let done: UInt64
    let total: UInt64
    /// Empty unless the job is running.
    let workerId: String
    /// 0: at once.
    let runAt: Double
    let createdAt: Double
    let updatedAt: Double
    let errors: [Failure]
    let arguments: [String: String]

    init(_ job: Tributary_V1_JobInfo) {
        jobId = job.jobID
        batch = job.batch
        kind = job.kind
        state = job.state
        attempt = job.attempt
        maxAttempts = job.maxAttempts
        done = job.done
        total = job.total
        workerId = job.workerID
        runAt = job.runAt
        createdAt = job.createdAt
        updatedAt = job.updatedAt
        errors = job.errors.map { Failure(attempt: $0.attempt, at: $0.at, message: $0.message) }
        arguments = job.arguments
    }
}
