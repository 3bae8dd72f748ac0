import Foundation
import TributaryCore
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
            "running": try reply.running.map {
                try JSONSerialization.jsonObject(with: Data(JobJSON.text(JobInfo($0)).utf8))
            },
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

    /// `tributary jobs list --json`: `{"jobs": [...]}`, each job as ``JobJSON`` writes it.
    public static func jobs(_ jobs: [JobInfo]) throws -> String {
        try JobJSON.text(jobs)
    }

    /// `tributary jobs show ID --json`, as ``JobJSON`` writes it.
    public static func job(_ job: JobInfo) throws -> String {
        try JobJSON.text(job)
    }

    /// `tributary push import --json`: the batch, an id per job in order, and the positions of those not enqueued
    /// (a job with the same unique key holds it; the id is that job's).
    public static func pushed(batch: String, jobIDs: [UInt64], duplicates: [Int]) throws -> String {
        try encode(["batch": batch, "jobIds": jobIDs, "duplicates": duplicates])
    }

    static func encode(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }
}
