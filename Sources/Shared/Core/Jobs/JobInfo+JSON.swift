import Foundation

/// A job's JSON, the one form every JSON view of a job takes (`tributary jobs list|show --json`, the HTTP API's
/// `/api/jobs`): every field, absent ones included, under the protocol's lowerCamelCase names (`JobInfo` in
/// docs/protocol.md). Absent values are written as the protocol writes them: an empty string (`workerId`,
/// `schedule`, `waiting`, `onParentFailure` of a job without parents), 0 (`runAt` for at once, `tick`); times are
/// seconds since 1970.
extension JobInfo: Encodable {
    /// The keys, one per stored property (the JSON test checks that none is left out).
    enum CodingKeys: String, CodingKey {
        case id = "jobId"
        case batch, kind, state, attempt, maxAttempts, attemptsCounted, done, total
        case worker = "workerId"
        case runAt, createdAt, updatedAt, arguments, errors, queue, afterJobs, afterBatches, onParentFailure
        case schedule, tick, waiting
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(batch, forKey: .batch)
        try container.encode(kind, forKey: .kind)
        try container.encode(state.rawValue, forKey: .state)
        try container.encode(attempt, forKey: .attempt)
        try container.encode(maxAttempts, forKey: .maxAttempts)
        try container.encode(attemptsCounted, forKey: .attemptsCounted)
        try container.encode(done, forKey: .done)
        try container.encode(total, forKey: .total)
        try container.encode(worker ?? "", forKey: .worker)
        try container.encode(runAt?.timeIntervalSince1970 ?? 0, forKey: .runAt)
        try container.encode(createdAt.timeIntervalSince1970, forKey: .createdAt)
        try container.encode(updatedAt.timeIntervalSince1970, forKey: .updatedAt)
        try container.encode(arguments, forKey: .arguments)
        try container.encode(errors, forKey: .errors)
        try container.encode(queue, forKey: .queue)
        try container.encode(afterJobs, forKey: .afterJobs)
        try container.encode(afterBatches, forKey: .afterBatches)
        try container.encode(hasParents ? onParentFailure.rawValue : "", forKey: .onParentFailure)
        try container.encode(schedule ?? "", forKey: .schedule)
        try container.encode(tick ?? 0, forKey: .tick)
        try container.encode(waiting ?? "", forKey: .waiting)
    }

    /// Whether it waits for parent jobs or batches.
    public var hasParents: Bool { !afterJobs.isEmpty || !afterBatches.isEmpty }
}

/// Writes jobs and schedules as JSON text: the encoder the CLI and the HTTP API share, so that both print the same
/// fields.
public enum JobJSON {
    /// One job: `{"jobId": 12, "state": "dead", …}`.
    public static func text(_ job: JobInfo) throws -> String {
        String(decoding: try encoder.encode(job), as: UTF8.self)
    }

    /// A list: `{"jobs": [{…}, …]}`.
    public static func text(_ jobs: [JobInfo]) throws -> String {
        String(decoding: try encoder.encode(["jobs": jobs]), as: UTF8.self)
    }

    /// Schedules: `{"schedules": [{…}, …]}`.
    public static func text(_ schedules: [ScheduleInfo]) throws -> String {
        String(decoding: try encoder.encode(["schedules": schedules]), as: UTF8.self)
    }

    /// One queue: `{"name": …, "queued": …, "latencySeconds": …, "paused": …}`.
    public static func text(_ queue: CoordinatorStatus.Queue) throws -> String {
        String(decoding: try encoder.encode(queue), as: UTF8.self)
    }

    /// Queues: `{"queues": [{"name": …, "queued": …, "latencySeconds": …, "paused": …}, …]}`, as a status has them.
    public static func text(_ queues: [CoordinatorStatus.Queue]) throws -> String {
        String(decoding: try encoder.encode(["queues": queues]), as: UTF8.self)
    }

    /// Sorted keys, slashes as they are.
    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
