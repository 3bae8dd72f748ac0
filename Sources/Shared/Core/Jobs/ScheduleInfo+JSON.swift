import Foundation

/// A schedule's JSON (`tributary schedules list --json`): every field, under the protocol's lowerCamelCase names,
/// the spec's fields beside where it stands; `lastTick` and `lastJobId` are 0 before its first job, `nextTick` 0
/// when its expression has no more ticks; times are seconds since 1970.
extension ScheduleInfo: Encodable {
    enum CodingKeys: String, CodingKey {
        case name, cron, timezone, missed, job, paused, nextTick, lastTick, lastJobId, fired, skipped
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(spec.name, forKey: .name)
        try container.encode(spec.cron, forKey: .cron)
        try container.encode(spec.timeZone, forKey: .timezone)
        try container.encode(spec.missed.rawValue, forKey: .missed)
        try container.encode(spec.job, forKey: .job)
        try container.encode(paused, forKey: .paused)
        try container.encode(nextTick, forKey: .nextTick)
        try container.encode(lastTick ?? 0, forKey: .lastTick)
        try container.encode(lastJobID ?? 0, forKey: .lastJobId)
        try container.encode(fired, forKey: .fired)
        try container.encode(skipped, forKey: .skipped)
    }
}

/// A job spec's JSON, under the protocol's names (`JobSpec` in docs/protocol.md): every field, the payload in
/// base64, durations in milliseconds (0: the default, or no limit for `timeoutMs`), `runAt` 0 for at once.
extension JobSpec: Encodable {
    enum CodingKeys: String, CodingKey {
        case kind, payload, arguments, total, maxAttempts, backoffBaseMs, backoffCapMs, priority, runAt, uniqueKey
        case timeoutMs, queue, afterJobs, afterBatches, afterPushed, onParentFailure
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(payload.base64EncodedString(), forKey: .payload)
        try container.encode(arguments, forKey: .arguments)
        try container.encode(total, forKey: .total)
        try container.encode(maxAttempts, forKey: .maxAttempts)
        try container.encode(backoffBase.wholeMilliseconds, forKey: .backoffBaseMs)
        try container.encode(backoffCap.wholeMilliseconds, forKey: .backoffCapMs)
        try container.encode(priority, forKey: .priority)
        try container.encode(runAt?.timeIntervalSince1970 ?? 0, forKey: .runAt)
        try container.encode(uniqueKey ?? "", forKey: .uniqueKey)
        try container.encode(timeout?.wholeMilliseconds ?? 0, forKey: .timeoutMs)
        try container.encode(queue, forKey: .queue)
        try container.encode(afterJobs, forKey: .afterJobs)
        try container.encode(afterBatches, forKey: .afterBatches)
        try container.encode(afterPushed, forKey: .afterPushed)
        try container.encode(hasParents ? onParentFailure.rawValue : "", forKey: .onParentFailure)
    }
}
