import Foundation
import TributaryProtocol

/// What the CLI's `--json` flags print: every field of the reply, zero and empty ones included (protobuf's JSON
/// mapping leaves those out, and a client should not have to guess that a missing `dead` means 0). Keys are the
/// protobuf JSON names (lowerCamelCase); integers are numbers; times are seconds since 1970 (the values of date
/// attributes in `tributary fetch`'s objects are ISO 8601 instead, as imports take them: ``object(_:prefetched:)``).
public enum JSONOutput {
    /// `tributary status --json`.
    public static func status(_ reply: Tributary_V1_StatusReply) throws -> String {
        let counts = reply.jobs
        return try encode([
            "workers": reply.workers.map { worker -> [String: Any] in
                [
                    "workerId": worker.workerID, "name": worker.name, "pid": Int(worker.pid), "state": worker.state,
                    "secondsSinceHeartbeat": worker.secondsSinceHeartbeat, "currentJobId": worker.currentJobID,
                ]
            },
            "jobs": [
                "waiting": counts.waiting, "queued": counts.queued, "running": counts.running, "done": counts.done,
                "dead": counts.dead,
                "cancelled": counts.cancelled,
            ],
            "lastSeq": reply.lastSeq, "oldestHistorySeq": reply.oldestHistorySeq, "storePath": reply.storePath,
            "pool": reply.pool.map { process -> [String: Any] in
                [
                    "name": process.name, "pid": Int(process.pid), "restarts": Int(process.restarts),
                    "lastExitStatus": Int(process.lastExitStatus), "crashLooping": process.crashLooping,
                ]
            },
            "running": reply.running.map(fields),
            "limits": reply.limits.map { limit -> [String: Any] in
                [
                    "target": limit.target, "limit": Int(limit.limit), "running": limit.running,
                    "periodSeconds": limit.periodSeconds,
                ]
            },
            "queues": reply.queues.map { queue -> [String: Any] in
                ["name": queue.name, "queued": queue.queued, "latencySeconds": queue.latencySeconds]
            },
        ])
    }

    /// `tributary jobs list --json`: `{"jobs": [...]}`.
    public static func jobs(_ jobs: [Tributary_V1_JobInfo]) throws -> String {
        try encode(["jobs": jobs.map(fields)])
    }

    /// `tributary jobs show ID --json`.
    public static func job(_ job: Tributary_V1_JobInfo) throws -> String {
        try encode(fields(of: job))
    }

    /// A job's fields; `workerId` is empty unless it runs, `runAt` 0 means at once.
    private static func fields(of job: Tributary_V1_JobInfo) -> [String: Any] {
        [
            "jobId": job.jobID, "batch": job.batch, "kind": job.kind, "state": job.state, "attempt": Int(job.attempt),
            "maxAttempts": Int(job.maxAttempts), "done": job.done, "total": job.total, "workerId": job.workerID,
            "runAt": job.runAt, "createdAt": job.createdAt, "updatedAt": job.updatedAt,
            "errors": job.errors.map {
                ["attempt": Int($0.attempt), "at": $0.at, "message": $0.message] as [String: Any]
            },
            "arguments": job.arguments, "queue": job.queue.isEmpty ? "default" : job.queue, "waiting": job.waiting,
        ]
    }

    static func encode(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }
}
