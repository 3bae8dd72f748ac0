import Foundation
import TributaryCore
import TributaryProtocol

/// What the CLI's `--json` flags print: every field of the reply, zero and empty ones included (protobuf's JSON
/// mapping leaves those out, and a client should not have to guess that a missing `dead` means 0). Keys are the
/// protobuf JSON names (lowerCamelCase); integers are numbers; times are seconds since 1970 (the values of date
/// attributes in `tributary fetch`'s objects are ISO 8601 instead, as imports take them: ``object(_:prefetched:)``).
public enum JSONOutput {
    /// `tributary status --json`, as ``JobJSON`` writes the status (the HTTP API's `/api/status` too).
    public static func status(_ status: CoordinatorStatus) throws -> String {
        try JobJSON.text(status)
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
    public static func pushed(_ pushed: PushedBatch) throws -> String {
        try JobJSON.text(pushed)
    }

    /// A batch change's result: `{"entity", "count", "commits": [seq...], "ids": [...]}`.
    public static func batchChange(_ result: BatchChangeResult, entity: String) throws -> String {
        try encode([
            "entity": entity, "count": result.count, "commits": result.commits.map { NSNumber(value: $0) },
            "ids": result.ids.map { $0.uuid.uuidString.lowercased() },
        ])
    }

    /// A batch change's --dry-run: `{"entity", "count", "dry_run": true}`.
    public static func dryRun(count: Int, entity: String) throws -> String {
        try encode(["entity": entity, "count": count, "dry_run": true])
    }

    static func encode(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }
}
