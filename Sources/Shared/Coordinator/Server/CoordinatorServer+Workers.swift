import Foundation
import TributaryCore
import TributaryProtocol

extension CoordinatorServer {
    func workerHello(_ hello: Tributary_V1_WorkerHello, from peer: Data, requestID: UInt64) throws {
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
        if workers[peer] != nil {
            // The same peer said hello again (it restarted its session): its old leases are void.
            workerLeft(peer, reason: "reconnected")
        }
        let record = workers.register(routingID: peer, hello: hello, now: .now)
        if hello.acceptsBatches { io.packingPeers.insert(peer) }
        logger.info(
            "worker joined",
            metadata: [
                "worker": "\(record.id)", "name": "\(record.name)", "pid": "\(record.pid)",
                "queues": "\(record.queues.joined(separator: ","))",
            ])
        let welcome = Tributary_V1_Welcome.with {
            $0.workerID = record.id
            $0.modelJson = modelJSON
            $0.liveness = configuration.liveness
            $0.capabilities = Self.capabilityNames
        }
        reply(to: peer, requestID: requestID, .welcome(welcome))
    }

    func workerReady(_ ready: Tributary_V1_WorkerReady, from peer: Data) throws {
        try requireWorker(peer)
        addCredit(ready.credit, to: peer)
    }

    /// Credit from a `WorkerReady` or a save: the worker may be sent that many more jobs, from the next dispatch.
    func addCredit(_ credit: UInt32, to peer: Data) {
        workers.addCredit(credit, to: peer)
        handOver.isDue = true
    }

    /// The model as JSON, as `Welcome` and `ModelReply` carry it.
    var modelJSON: String { String(decoding: configuration.model.encodedJSON(), as: UTF8.self) }

    /// Answers each save of a group commit: an ack (publishing its didSave) or the error that refused it alone.
    func answer(
        _ members: [SaveGroup.Member], _ results: [Result<AppliedSave, any Error>], writtenAt: ContinuousClock.Instant
    ) {
        for (member, result) in zip(members, results) {
            switch result {
            case .success(let applied):
                acknowledge(member, applied, writtenAt: writtenAt)
                // The job's progress as the commit left it, after the commit's didSave.
                if let progress = applied.progress {
                    publisher.publish(progress)
                    if progress.state == .done {
                        // The router knows the kind of the attempts it sent out.
                        jobsEnded([JobEnding(kind: "", progress: progress, ranAttempt: true)], published: true)
                    }
                }
            case .failure(let error):
                logRefusal("save refused", error, peer: member.peer, metadata: ["job": "\(member.save.jobID)"])
                replyOrGather(
                    to: member.peer, requestID: member.requestID, .error(Self.wireError(error, save: member.save)))
            }
        }
    }

    private func acknowledge(_ member: SaveGroup.Member, _ applied: AppliedSave, writtenAt: ContinuousClock.Instant) {
        var ack = applied.ack
        ack.jobID = UInt64(member.save.jobID)
        ack.batchIndex = UInt32(clamping: member.save.batchIndex)
        switch applied.outcome {
        case .committed(_, let events, _, _):
            WriterMetrics.commitToPublish.record(duration: writtenAt.duration(to: .now))
            publisher.publish(events)
            WriterMetrics.commits.increment()
            WriterMetrics.rowsCommitted.increment(by: Int64(events.objectsChanged))
            totals.committed(rows: events.objectsChanged)
            WriterMetrics.saveToCommit.record(duration: member.receivedAt.duration(to: writtenAt))
        case .committedEmpty:
            WriterMetrics.saveToCommit.record(duration: member.receivedAt.duration(to: writtenAt))
        case .duplicate, .answeredBefore:
            break
        }
        if member.save.completesJob, workers[member.peer]?.id == member.worker {
            workers[member.peer]?.jobs[member.save.jobID] = nil
        }
        replyOrGather(to: member.peer, requestID: member.requestID, .saveAck(ack))
    }

    private static func wireError(_ error: any Error, save: SaveRequest) -> Tributary_V1_Error {
        switch error {
        case let error as LeaseError:
            let code: Tributary_V1_ErrorCode =
                error.isUnknownJob
                ? .unknownJob : error.isCancelled ? .jobCancelled : error.isOutOfOrder ? .invalidRequest : .staleLease
            return ProtocolError(code, error.message, jobID: UInt64(save.jobID)).wire
        case let error as StoreError:
            return ProtocolError(error, jobID: UInt64(save.jobID)).wire
        default:
            return ProtocolError(.internal, "\(error)", jobID: UInt64(save.jobID)).wire
        }
    }

    /// A worker's failed attempt, written behind the saves before it; the worker stops holding the job once it is.
    /// While the store cannot be written, the failure is kept and written once it can (the worker does not send it
    /// again).
    func jobFailed(_ failure: Tributary_V1_JobFailed, from peer: Data, requestID: UInt64) throws {
        let worker = try requireWorker(peer)
        try Intake.requireInt64(failure.jobID, "job_id")
        logger.warning(
            "job failed",
            metadata: ["job": "\(failure.jobID)", "worker": "\(worker.id)", "error": "\(failure.message)"])
        let write = StoreWrite<FailedAttempt?>.failAttempt(
            job: Int64(failure.jobID), attempt: Int(failure.attempt), worker: worker.id, message: failure.message,
            permanent: failure.permanent)
        self.write(write) { [self] result in
            switch result {
            case .failure(let error as StoreError) where error.code == .unwritable:
                workers.pendingFailures.append((failure, peer))
            case .failure(let error):
                refuse(requestID, from: peer, error)
            case .success(let failed):
                if let (failed, requeued) = failed {
                    logger.notice(
                        "job attempt failed", metadata: ["job": "\(failure.jobID)", "outcome": "\(failed.outcome)"])
                    attemptsFailed([failed])
                    // A job going back to the queue did not end: its state goes on the feed all the same.
                    if let requeued { publisher.publish(requeued) }
                }
                workers[peer]?.jobs[Int64(failure.jobID)] = nil
            }
        }
    }

    /// Writes the failures reported while the store could not be written, once it can. A worker that left meanwhile
    /// had its jobs handed back as it left: its failures are dropped.
    /// Also hands back the jobs of workers whose departure the store refused after their peer registered anew.
    func retryRefusedWrites() {
        guard store.writer.writability.fault() == nil else { return }
        let departures = workers.pendingDepartures
        workers.pendingDepartures = []
        for departure in departures {
            handBack(
                departure.worker, at: departure.peer, reason: departure.reason, handsBack: departure.handsBack)
        }
        guard !workers.pendingFailures.isEmpty else { return }
        let pending = workers.pendingFailures
        workers.pendingFailures = []
        for (failure, peer) in pending where workers[peer] != nil {
            do {
                try jobFailed(failure, from: peer, requestID: 0)
            } catch {
                logger.error(
                    "cannot record a job's failure", metadata: ["job": "\(failure.jobID)", "error": "\(error)"])
            }
        }
    }

    /// Forgets a worker and returns its jobs to the queue, written behind the saves before it; the worker is
    /// forgotten once the store has its jobs back (if the store refuses, it stays known and the next reap tries
    /// again). From here on it is sent no new jobs.
    /// - Parameter handsBack: the worker gave back the jobs it did not finish (a goodbye, after its running jobs
    ///   ended or were interrupted at its shutdown timeout), or its process exited during the pool's graceful stop:
    ///   they go back without counting an attempt. Otherwise each running job's attempt counts as failed.
    func workerLeft(_ peer: Data, reason: String, handsBack: Bool = false) {
        guard let worker = workers[peer], !worker.leaving else { return }
        workers[peer]?.credit = 0
        workers[peer]?.leaving = true
        handBack(worker, at: peer, reason: reason, handsBack: handsBack)
    }

    /// Writes `worker`'s jobs back to the queue, then forgets it. If the store refuses, a worker still registered
    /// stays known (the next reap tries again); one whose peer registered anew meanwhile is kept aside and tried
    /// again once the store can be written.
    private func handBack(_ worker: WorkerRecord, at peer: Data, reason: String, handsBack: Bool) {
        // The metrics follow what the store did: a job whose completing save committed first stays done.
        let requeued: (Result<Int, any Error>) -> Void = { [self] result in
            switch result {
            case .success(let requeued): forget(worker, at: peer, reason: reason, requeued: requeued)
            case .failure(let error):
                if workers[peer]?.id == worker.id {
                    workers[peer]?.leaving = false
                } else {
                    workers.pendingDepartures.append((worker, peer, reason, handsBack))
                }
                logger.error(
                    "cannot re-queue the jobs of a worker that left",
                    metadata: ["worker": "\(worker.id)", "reason": "\(reason)", "error": "\(error)"])
            }
        }
        if handsBack {
            write(.releaseJobs(of: worker.id)) { [self] result in
                requeued(
                    result.map { released in
                        for id in released { jobMetrics.handedBack(job: id) }
                        return released.count
                    })
            }
        } else {
            // Only the jobs it was given count as lost attempts; any claimed for it and not yet sent are handed back.
            let write = StoreWrite<(requeued: Int, failed: [FailedAttempt])>.requeueJobs(
                of: worker.id, started: Set(worker.jobs.keys), reason: "attempt lost: worker \(worker.id) \(reason)")
            self.write(write) { [self] result in
                requeued(
                    result.map { lost in
                        attemptsFailed(lost.failed)
                        return lost.requeued
                    })
            }
        }
    }

    /// Forgets a worker whose jobs went back to the queue.
    private func forget(_ worker: WorkerRecord, at peer: Data, reason: String, requeued: Int) {
        if workers[peer]?.id == worker.id {
            workers.remove(peer)
            io.packingPeers.remove(peer)
        }
        logger.info(
            "worker left", metadata: ["worker": "\(worker.id)", "reason": "\(reason)", "requeued": "\(requeued)"])
        handOver.isDue = true
    }

    /// A local pool process exited: its jobs go back at once rather than after its heartbeats lapse.
    /// Matched by pid and pool name, so a remote worker that happens to have the same pid is left alone. During the
    /// pool's graceful stop, its jobs go back without counting an attempt, as its goodbye would have had them (the
    /// exit may be handled before the goodbye arrives, and a worker killed at the stop's end sent none).
    func workerProcessExited(pid: Int32, name: String) {
        guard let peer = workers.routingID(ofPID: pid, name: name) else { return }
        workerLeft(peer, reason: "process \(pid) exited", handsBack: snapshot.poolStopBegan != nil)
    }

    /// Counts failed attempts, and the jobs that ended of them (``jobsEnded(_:published:)``).
    func attemptsFailed(_ failures: [FailedAttempt]) {
        for failure in failures {
            jobMetrics.attemptFailed(job: failure.id, attempt: failure.attempt)
            jobsEnded(failure.endings)
        }
    }

    /// Tells the workers of attempts that timed out (maintenance failed them in the store) to stop them.
    func stopAttempts(_ attempts: [JobStore.TimedOutAttempt]) {
        // A retry, or a batch callback (a death may finish a batch), may be waiting.
        if !attempts.isEmpty { handOver.isDue = true }
        attemptsFailed(attempts.map(\.failure))
        for expired in attempts {
            // Only the attempt that timed out: by now the job may have been retried and leased again.
            guard let holder = workers.routingID(holding: expired.jobID),
                workers[holder]?.jobs[expired.jobID] == expired.attempt
            else { continue }
            workers[holder]?.jobs[expired.jobID] = nil
            reply(
                to: holder, requestID: 0,
                .cancelJob(
                    .with {
                        $0.jobID = UInt64(expired.jobID)
                        $0.attempt = UInt32(clamping: expired.attempt)
                    }))
        }
    }

    /// Forgets the workers whose heartbeats lapsed, handing their jobs back with an attempt counted.
    func reapSilentWorkers() {
        // Silence is judged as of the socket's last read: a loop held up read nothing.
        for worker in workers.expired(now: io.loop.lastPolled, liveness: configuration.liveness) {
            workerLeft(worker.routingID, reason: "missed \(configuration.liveness) heartbeats")
        }
    }

    @discardableResult
    func requireWorker(_ peer: Data) throws -> WorkerRecord {
        guard let worker = workers[peer] else {
            throw ProtocolError(.unknownWorker, "this peer has not registered as a worker (send WorkerHello first)")
        }
        return worker
    }
}
