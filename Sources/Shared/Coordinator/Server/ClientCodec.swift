import Foundation
import TributaryCore
import TributaryProtocol

/// The ZeroMQ edge of the handlers: a client's request message decoded to the handler call it names, and the
/// handler's answer encoded as the reply message. The only place where a client request's protobuf types meet the
/// handlers (``CoordinatorHandlers``); the router calls it in its turn, so each request's place follows the messages
/// before it, and has the reader pool send the reply.
struct ClientCodec: Sendable {
    typealias Body = Tributary_V1_Envelope.OneOf_Body

    let handlers: CoordinatorHandlers
    /// Where a fetch is checked against the model as it is decoded.
    let store: RootStore

    /// Whether `body` is a client's request that a handler answers (``promise(_:)`` makes its answer).
    static func isRequest(_ body: Body) -> Bool {
        switch body {
        case .statusRequest, .batchStatusRequest, .jobsRequest, .jobRequest, .retryJobRequest, .cancelJobRequest,
            .deleteJobRequest, .queueActionRequest, .putScheduleRequest, .schedulesRequest, .scheduleActionRequest,
            .historyRequest, .snapshotRequest, .subscriberUpdate, .subscribersRequest, .deleteSubscriberRequest,
            .fetchRequest, .aggregateRequest, .modelRequest, .backupRequest:
            true
        default: false
        }
    }

    /// The answer to come for a client's request (``isRequest(_:)``).
    /// - Throws: ``/TributaryProtocol/ProtocolError`` (or the handler's refusal) naming what is wrong with it.
    func promise(_ body: Body) throws -> Promised<Body> {
        switch body {
        case .statusRequest: return handlers.status.status().map { Body.statusReply($0.wire) }
        case .batchStatusRequest(let request):
            return try handlers.batches.status(request.batch).map { Body.batchStatusReply($0.wire) }
        case .jobsRequest(let request): return try jobs(request)
        case .jobRequest(let request):
            return handlers.jobs.show(try Self.id(request.jobID)).map { Body.jobInfo($0.wire) }
        case .retryJobRequest(let request):
            return try handlers.jobs.retry(try Self.id(request.jobID)).map { Body.jobInfo($0.wire) }
        case .cancelJobRequest(let request):
            return try handlers.jobs.cancel(try Self.id(request.jobID)).map { Body.jobInfo($0.wire) }
        case .deleteJobRequest(let request):
            return try handlers.jobs.delete(try Self.id(request.jobID)).map { Body.jobInfo($0.wire) }
        case .queueActionRequest(let request):
            return try handlers.queues.act(try Self.queueAction(request.action), on: request.name).map {
                Body.queueInfo($0.wire)
            }
        case .putScheduleRequest(let request): return try putSchedule(request)
        case .schedulesRequest:
            return handlers.schedules.list().map { list in
                Body.schedulesReply(.with { $0.schedules = list.map(\.wire) })
            }
        case .scheduleActionRequest(let request):
            return try handlers.schedules.act(try ScheduleAction(wire: request.action), on: request.name)
                .map { Body.scheduleInfo($0.wire) }
        case .historyRequest(let request): return try history(request)
        case .snapshotRequest(let request): return try snapshotPage(request)
        case .subscriberUpdate(let update):
            try Intake.requireInt64(update.position, "position")
            return try handlers.subscribers.update(
                update.name, position: FeedPosition(seq: update.position, epoch: update.epoch),
                registerOnly: update.registerOnly
            ).map { Body.subscriberInfo($0.wire) }
        case .subscribersRequest:
            return handlers.subscribers.list().map { list in
                Body.subscribersReply(.with { $0.subscribers = list.map(\.wire) })
            }
        case .deleteSubscriberRequest(let request):
            return try handlers.subscribers.delete(request.name).map { Body.subscriberInfo($0.wire) }
        case .fetchRequest(let request):
            return handlers.fetches.fetch(try store.query(for: request)).map { Body.fetchReply($0.message) }
        case .aggregateRequest(let request):
            return handlers.fetches.aggregate(try store.aggregateQuery(for: request)).map {
                Body.aggregateReply($0.wire)
            }
        case .modelRequest:
            return handlers.fetches.model().map { json in Body.modelReply(.with { $0.modelJson = json }) }
        case .backupRequest(let request): return try backup(request)
        default: throw ProtocolError(.internal, "\(CoordinatorServer.name(of: body)) is not a client's request")
        }
    }

    /// A push's jobs as the handlers check them, with its batch's callback.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming the job and what is wrong with it.
    func push(_ push: Tributary_V1_PushJobs) throws -> (specs: [JobSpec], onComplete: JobSpec?) {
        for (index, spec) in push.jobs.enumerated() {
            guard spec.runAt.isFinite && spec.runAt >= 0 else {
                throw ProtocolError(.invalidRequest, "job \(index) has a run_at that is not a time")
            }
            for parent in spec.afterJobs { try Intake.requireInt64(parent, "after_jobs of job \(index)") }
        }
        let specs = try push.jobs.map(JobSpec.init(checking:))
        let onComplete = push.hasOnComplete ? JobSpec(push.onComplete) : nil
        try handlers.pushes.check(specs, onComplete: onComplete)
        return (specs, onComplete)
    }

    private func jobs(_ request: Tributary_V1_JobsRequest) throws -> Promised<Body> {
        let state = request.state.isEmpty ? nil : try JobState(wire: request.state)
        try Intake.requireInt64(request.beforeID, "before_id")
        return handlers.jobs.list(
            state: state, batch: request.batch, limit: Int(request.limit),
            before: request.beforeID == 0 ? nil : Int64(request.beforeID)
        ).map { jobs in Body.jobsReply(.with { $0.jobs = jobs.map(\.wire) }) }
    }

    private func putSchedule(_ request: Tributary_V1_PutScheduleRequest) throws -> Promised<Body> {
        guard request.hasSchedule else { throw ProtocolError(.invalidRequest, "PutScheduleRequest has no schedule") }
        return try handlers.schedules.put(try ScheduleSpec(checking: request.schedule), replace: request.replace)
            .map { Body.scheduleInfo($0.wire) }
    }

    private func history(_ request: Tributary_V1_HistoryRequest) throws -> Promised<Body> {
        try Intake.requireInt64(request.afterSeq, "after_seq")
        try Intake.requireInt64(request.untilSeq, "until_seq")
        var query = FeedStore.HistoryQuery(after: request.afterSeq)
        query.afterEpoch = request.afterEpoch
        query.until = request.untilSeq
        query.filter = FeedFilter(entities: Set(request.entities), attributes: Set(request.attributes))
        if request.maxCommits > 0 { query.maxCommits = Int(request.maxCommits) }
        return try handlers.feed.history(query).map { Body.historyReply($0.message) }
    }

    private func snapshotPage(_ request: Tributary_V1_SnapshotRequest) throws -> Promised<Body> {
        try handlers.feed.snapshotPage(
            request.snapshotID, entities: Set(request.entities), maxRows: Int(request.maxRows)
        ).map { page in
            Body.snapshotPage(
                .with {
                    $0.snapshotID = page.snapshotID
                    $0.seq = page.seq
                    $0.epoch = page.epoch
                    $0.objects = page.objects
                    $0.done = page.done
                })
        }
    }

    private func backup(_ request: Tributary_V1_BackupRequest) throws -> Promised<Body> {
        try handlers.backups.backup(to: request.path).map { backup in
            Body.backupReply(
                .with {
                    $0.path = backup.path
                    $0.bytes = backup.bytes
                    $0.lastSeq = backup.lastSeq
                    $0.seconds = backup.seconds
                })
        }
    }

    private static func id(_ id: UInt64) throws -> Int64 {
        try Intake.requireInt64(id, "job_id")
        return Int64(id)
    }

    private static func queueAction(_ name: String) throws -> QueueAction {
        guard let action = QueueAction(rawValue: name) else {
            throw ProtocolError(
                .invalidRequest,
                "unknown queue action '\(name)' (one of \(QueueAction.names.joined(separator: ", ")))")
        }
        return action
    }
}
