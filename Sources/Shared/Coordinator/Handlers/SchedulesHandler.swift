import Foundation
import TributaryCore
import TributaryProtocol

/// Schedules (periodic jobs): set, paused, resumed and deleted as writes behind the saves before them, listed from
/// what is committed.
package struct SchedulesHandler: Sendable {
    let parts: HandlerParts

    /// Adds schedule `spec`, or replaces the one of its name when `replace`.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` when its job is an import, or sets more than a schedule's job
    ///   may (a payload, a unique key, parents), or names a bad queue.
    package func put(_ spec: ScheduleSpec, replace: Bool) throws -> Promised<ScheduleInfo> {
        guard spec.job.kind != ImportJob.kind else {
            throw ProtocolError(.invalidRequest, "a schedule cannot enqueue import jobs: they need rows to import")
        }
        guard spec.job.payload.isEmpty, spec.job.uniqueKey == nil, !spec.job.hasParents else {
            throw ProtocolError(
                .invalidRequest,
                "a schedule's job may set kind, arguments, queue, priority, max_attempts, backoff and timeout_ms only")
        }
        if let refusal = JobQueue.refusal(of: spec.job.queue) { throw ProtocolError(.invalidRequest, refusal) }
        let logger = parts.logger
        return try RequestPlace.written(.putSchedule(spec, replace: replace), parts) { info in
            logger.info(
                "schedule set",
                metadata: ["schedule": "\(spec.name)", "cron": "\(spec.cron)", "next": "\(info.nextTick)"])
        }
    }

    /// The schedules, by name.
    package func list() -> Promised<[ScheduleInfo]> {
        let store = parts.store
        return RequestPlace.committed(parts) { try await store.jobs.schedules() }
    }

    /// Pauses, resumes or deletes schedule `name`.
    /// - Throws (from the value): ``/TributaryProtocol/ProtocolError`` when there is no such schedule.
    package func act(_ action: ScheduleAction, on name: String) throws -> Promised<ScheduleInfo> {
        let write: StoreWrite<ScheduleInfo?> =
            switch action {
            case .pause: .setSchedule(name, paused: true)
            case .resume: .setSchedule(name, paused: false)
            case .delete: .deleteSchedule(name)
            }
        let logger = parts.logger
        return try RequestPlace.written(write, parts) { info in
            if info != nil { logger.info("schedule \(action.rawValue)", metadata: ["schedule": "\(name)"]) }
        }.map { info in
            guard let info else { throw ProtocolError(.invalidRequest, "schedule '\(name)' does not exist") }
            return info
        }
    }
}
