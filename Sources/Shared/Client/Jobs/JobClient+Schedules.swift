import Foundation
import TributaryCore
import TributaryProtocol

/// Schedules: periodic jobs the coordinator keeps in its store (docs/jobs.md).
extension JobClient {
    /// Adds a schedule, or replaces the one of its name when `replace` (keeping its counts and whether it is paused).
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming what the coordinator refused (a name taken, a bad cron
    ///   expression, ...).
    public func putSchedule(_ schedule: ScheduleSpec, replace: Bool = false) async throws -> ScheduleInfo {
        let request = Tributary_V1_PutScheduleRequest.with {
            $0.schedule = schedule.wire
            $0.replace = replace
        }
        return try await scheduleReply(.putScheduleRequest(request))
    }

    /// Every schedule, by name.
    public func schedules() async throws -> [ScheduleInfo] {
        let reply = try await connection.request(.schedulesRequest(.init()))
        guard case .schedulesReply(let schedules) = reply.body else { throw Self.unexpected(reply) }
        return try schedules.schedules.map(ScheduleInfo.init)
    }

    /// Pauses, resumes or deletes the schedule `name`.
    /// - Returns: the schedule after the action (a deleted one as it was).
    /// - Throws: ``/TributaryProtocol/ProtocolError`` when no schedule has that name.
    public func schedule(_ name: String, action: ScheduleAction) async throws -> ScheduleInfo {
        let request = Tributary_V1_ScheduleActionRequest.with {
            $0.name = name
            $0.action = action.rawValue
        }
        return try await scheduleReply(.scheduleActionRequest(request))
    }

    /// The schedule the coordinator answers `request` with.
    private func scheduleReply(_ request: Tributary_V1_Envelope.OneOf_Body) async throws -> ScheduleInfo {
        let reply = try await connection.request(request)
        guard case .scheduleInfo(let info) = reply.body else { throw Self.unexpected(reply) }
        return try ScheduleInfo(info)
    }
}
