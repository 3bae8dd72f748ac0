import Foundation
import Logging
import TributaryCore
import TributaryProtocol

/// The workers' sessions as the router keeps them: who is connected, the credit each offered and the jobs each holds,
/// the saves and claims gathered for the writer's next group commit, and what a job's end or a worker's going does.
///
/// Owned by the router (``CoordinatorServer``) and used only in its turn. Joining, credit and the hand-over to the
/// writer are here; failures and departures in `WorkerSessions+Departures.swift`.
final class WorkerSessions {
    /// The connected workers, their credit and the jobs each holds.
    var workers: WorkerRegistry
    /// The saves and claims for the writer's next group commit (``submit(moreToCome:)``).
    var handOver = WriterHandOver()
    /// Job counters by kind and attempts' times, recorded as the router sees jobs go out and end.
    let jobMetrics = JobMetrics()
    let configuration: CoordinatorConfiguration
    let logger: Logger
    let parts: CoordinatorParts
    let io: RouterIO
    let replies: PeerReplies
    let followUps: FollowUps
    /// Whether the router's stop began: no new workers or claims.
    var stopping = false

    init(
        configuration: CoordinatorConfiguration, logger: Logger, parts: CoordinatorParts, io: RouterIO,
        workers: WorkerRegistry, replies: PeerReplies, followUps: FollowUps
    ) {
        self.workers = workers
        self.configuration = configuration
        self.logger = logger
        self.parts = parts
        self.io = io
        self.replies = replies
        self.followUps = followUps
    }

    /// A worker joins: its queues and weights checked, it is registered and welcomed with its id, the model and the
    /// coordinator's capabilities. A peer that said hello again starts a new session: the attempts it names as still
    /// running go on under the new one (``adopt(_:named:earlier:by:at:)``), its other leases are void.
    func hello(_ hello: Tributary_V1_WorkerHello, from peer: Data, requestID: UInt64) throws {
        if stopping { throw ProtocolError(.shuttingDown, "the coordinator is shutting down") }
        guard hello.queues.count <= JobQueue.maximumQueuesPerWorker else {
            throw ProtocolError(
                .invalidRequest,
                "a worker serves at most \(JobQueue.maximumQueuesPerWorker) queues (got \(hello.queues.count))")
        }
        for queue in hello.queues {
            if let refusal = JobQueue.refusal(of: queue) {
                throw ProtocolError(.invalidRequest, "WorkerHello: \(refusal)")
            }
        }
        guard Set(hello.queues).count == hello.queues.count else {
            throw ProtocolError(.invalidRequest, "WorkerHello names a queue twice")
        }
        guard
            hello.queueWeights.isEmpty
                || (hello.queueWeights.count == hello.queues.count
                    && hello.queueWeights.allSatisfy { (1...1_000).contains($0) })
        else {
            throw ProtocolError(
                .invalidRequest,
                "WorkerHello's queue_weights must give each of its queues a weight from 1 to 1000, or none")
        }
        let held = try Self.heldAttempts(in: hello)
        // This peer's registration so far, ended below once what it still runs was taken on.
        let earlier = workers[peer]
        let record = workers.register(routingID: peer, hello: hello, now: .now)
        if !held.isEmpty {
            // A registration still alive keeps its leases: only those of a worker gone from here are taken on.
            if workers.workers.values.contains(where: { $0.id == hello.previousWorkerID }) {
                logger.warning(
                    "a worker named as its previous id one still registered: it takes none of its jobs",
                    metadata: ["worker": "\(record.id)", "previous": "\(hello.previousWorkerID)"])
            } else {
                adopt(held, named: hello.previousWorkerID, earlier: earlier?.id, by: record, at: peer)
            }
        }
        // Behind the adoption: the earlier registration's other jobs go back (one leaving already has its hand-back).
        if let earlier, !earlier.leaving { handBack(earlier, at: peer, reason: "reconnected", handsBack: false) }
        if hello.acceptsBatches { io.packingPeers.insert(peer) }
        logger.info(
            "worker joined",
            metadata: [
                "worker": "\(record.id)", "name": "\(record.name)", "pid": "\(record.pid)",
                "queues": "\(record.queues.joined(separator: ","))",
            ])
        let welcome = Tributary_V1_Welcome.with {
            $0.workerID = record.id
            $0.modelJson = parts.handlers.fetches.modelJSON
            $0.liveness = configuration.liveness
            $0.capabilities = CoordinatorServer.capabilityNames
        }
        replies.send(to: peer, requestID: requestID, .welcome(welcome))
    }

    /// The most job attempts a `WorkerHello` may name as still running: a worker's credit is capped at 1,024.
    static let maximumHeldJobs = 1_024

    /// The attempts a hello says its worker still runs under its previous id; none without one.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` `INVALID_REQUEST` for more than ``maximumHeldJobs`` or a job id
    ///   out of range.
    private static func heldAttempts(in hello: Tributary_V1_WorkerHello) throws -> [JobStore.HeldAttempt] {
        guard hello.heldJobs.count <= maximumHeldJobs else {
            throw ProtocolError(
                .invalidRequest,
                "WorkerHello names \(hello.heldJobs.count) held jobs; a worker holds at most \(maximumHeldJobs)")
        }
        guard !hello.previousWorkerID.isEmpty else { return [] }
        return try hello.heldJobs.map { held in
            try Intake.requireInt64(held.jobID, "held_jobs.job_id")
            return JobStore.HeldAttempt(job: Int64(held.jobID), attempt: Int64(held.attempt))
        }
    }

    /// Leases to a worker that registered anew the attempts it still runs, where the store still leases them to the
    /// id it names, to this peer's `earlier` registration, or to a worker of an earlier primary (a cluster's new primary
    /// adopting what its predecessors leased to a live worker: ``JobStore/adoptJobs(_:from:grantedBefore:to:in:statements:)``).
    /// Written behind the saves before it and before the earlier registration's hand-back, so the worker's saves, sent
    /// once it is welcomed, find them adopted; the worker holds them from then on. Should it leave before, its
    /// departure (written after) hands them back by its id.
    private func adopt(
        _ held: [JobStore.HeldAttempt], named previous: String, earlier: String?, by worker: WorkerRecord,
        at peer: Data
    ) {
        let write = StoreWrite<[Int64]>.adoptJobs(
            held, from: [previous] + (earlier.map { [$0] } ?? []), grantedBefore: workers.idPrefix, to: worker.id)
        followUps.write(write) { [self] result in
            switch result {
            case .success(let adopted):
                guard workers[peer]?.id == worker.id else { return }
                let attempts = Dictionary(held.map { ($0.job, Int($0.attempt)) }) { first, _ in first }
                for job in adopted { workers[peer]?.jobs[job] = attempts[job] }
                logger.notice(
                    "worker took its running jobs on",
                    metadata: [
                        "worker": "\(worker.id)", "previous": "\(previous)", "adopted": "\(adopted.count)",
                        "voided": "\(held.count - adopted.count)",
                    ])
            case .failure(let error):
                // Its saves of those jobs are refused as a voided lease's; the jobs go back once theirs lapse.
                logger.warning(
                    "cannot hand a worker the jobs it still runs",
                    metadata: ["worker": "\(worker.id)", "jobs": "\(held.count)", "error": "\(error)"])
            }
        }
    }

    /// Credit from a `WorkerReady` or a save: the worker may be sent that many more jobs, from the next dispatch.
    func addCredit(_ credit: UInt32, to peer: Data) {
        workers.addCredit(credit, to: peer)
        handOver.isDue = true
    }

    /// The worker registered under `peer`.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` `UNKNOWN_WORKER` for a peer that has not said hello.
    @discardableResult
    func requireWorker(_ peer: Data) throws -> WorkerRecord {
        guard let worker = workers[peer] else {
            throw ProtocolError(.unknownWorker, "this peer has not registered as a worker (send WorkerHello first)")
        }
        return worker
    }

    /// Hands the saves gathered so far to the writer, with claims for workers' credit when a dispatch is due.
    /// Saves the writer no longer takes (it stopped) are refused.
    /// - Parameter moreToCome: more messages of the same wake-up follow: the writer gathers rather than commits
    ///   (see ``StoreWriter/enqueue(_:claims:moreToCome:)``). Without it, what gathered is committed when the store
    ///   is idle, even if this hands over nothing.
    nonisolated(nonsending) func submit(moreToCome: Bool = false) async {
        let (saves, claims) = handOver.take(
            from: &workers, claiming: !stopping, runLimits: configuration.runLimits,
            writable: parts.store.writer.writability.fault() == nil)
        guard !saves.isEmpty || !claims.isEmpty || !moreToCome else { return }
        guard await parts.writer.enqueue(saves, claims: claims, moreToCome: moreToCome) else {
            for save in saves {
                replies.send(
                    to: save.peer, requestID: save.requestID,
                    .error(
                        ProtocolError(.shuttingDown, "the coordinator is shutting down", jobID: UInt64(save.save.jobID))
                            .wire))
            }
            return
        }
    }

    /// Where every job that ended passes, whichever way it ended (its completing save, a failure, a lost worker, a
    /// timeout, a cancel, a parent's failure settling it): the job counters count it, and the feed's `$jobs` topic
    /// carries its state, after the commit that ended it.
    /// - Parameter published: the caller put their progress on the feed already (a completing save's, right after
    ///   its commit's didSave).
    func jobsEnded(_ endings: [JobEnding], published: Bool = false) {
        for ending in endings {
            if jobMetrics.ended(ending), ending.state == .done { parts.totals.jobDone() }
            if !published { parts.publisher.publish(ending.progress) }
        }
    }

    /// What a handler's write changed for the workers: jobs that ended are counted and published, a cancelled
    /// attempt's worker is told to stop it, and jobs that became due are claimed.
    func jobsChanged(_ change: JobsChange) {
        switch change {
        case .settled(let endings):
            jobsEnded(endings)
            handOver.isDue = true
        case .attemptCancelled(let job, let attempt): stop(job: job, attempt: attempt)
        case .due:
            if workers.anyHasCredit { handOver.isDue = true }
        }
    }

    /// Tells the worker holding `attempt` of `job` to stop it; nothing when no worker holds that attempt (by now the
    /// job may have been retried and leased again).
    func stop(job: Int64, attempt: Int) {
        guard let holder = workers.routingID(holding: job), workers[holder]?.jobs[job] == attempt else { return }
        workers[holder]?.jobs[job] = nil
        replies.send(
            to: holder, requestID: 0,
            .cancelJob(
                .with {
                    $0.jobID = UInt64(job)
                    $0.attempt = UInt32(clamping: attempt)
                }))
    }
}
