import Foundation
import TributaryCore
import TributaryProtocol

/// Requests that add, list, pause, resume or delete schedules (periodic jobs).
extension CoordinatorServer {
    func putSchedule(_ request: Tributary_V1_PutScheduleRequest, from peer: Data, requestID: UInt64) throws {
        guard request.hasSchedule else { throw ProtocolError(.invalidRequest, "PutScheduleRequest has no schedule") }
        let spec = try ScheduleSpec(checking: request.schedule)
        guard spec.job.kind != ImportJob.kind else {
            throw ProtocolError(.invalidRequest, "a schedule cannot enqueue import jobs: they need rows to import")
        }
        guard request.schedule.job.payload.isEmpty, request.schedule.job.uniqueKey.isEmpty,
            request.schedule.job.afterJobs.isEmpty, request.schedule.job.afterBatches.isEmpty,
            request.schedule.job.afterPushed.isEmpty
        else {
            throw ProtocolError(
                .invalidRequest,
                "a schedule's job may set kind, arguments, queue, priority, max_attempts, backoff and timeout_ms only")
        }
        if let refusal = JobQueue.refusal(of: spec.job.queue) { throw ProtocolError(.invalidRequest, refusal) }
        answer(after: .putSchedule(spec, replace: request.replace), to: peer, requestID: requestID) { [logger] info in
            logger.info(
                "schedule set",
                metadata: ["schedule": "\(spec.name)", "cron": "\(spec.cron)", "next": "\(info.nextTick)"])
            return .scheduleInfo(info.wire)
        }
    }

    /// Answered by the reader pool from the store.
    func listSchedules(from peer: Data, requestID: UInt64) throws {
        let store = store
        try readers.submit(peer: peer, requestID: requestID) {
            let schedules = try await store.jobs.schedules()
            return .schedulesReply(.with { $0.schedules = schedules.map(\.wire) })
        }
    }

    func scheduleAction(_ request: Tributary_V1_ScheduleActionRequest, from peer: Data, requestID: UInt64) throws {
        let write: StoreWrite<ScheduleInfo?>
        switch request.action {
        case "pause": write = .setSchedule(request.name, paused: true)
        case "resume": write = .setSchedule(request.name, paused: false)
        case "delete": write = .deleteSchedule(request.name)
        default:
            throw ProtocolError(
                .invalidRequest, "unknown schedule action '\(request.action)' (one of pause, resume, delete)")
        }
        answer(after: write, to: peer, requestID: requestID) { [logger] info in
            guard let info else {
                throw ProtocolError(.invalidRequest, "schedule '\(request.name)' does not exist")
            }
            logger.info("schedule \(request.action)", metadata: ["schedule": "\(request.name)"])
            return .scheduleInfo(info.wire)
        }
    }
}
