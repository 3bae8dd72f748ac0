import Foundation
import TributaryCore
import TributaryProtocol

extension CoordinatorServer {
    func workerHello(_ hello: Tributary_V1_WorkerHello, from peer: Data, requestID: UInt64) async throws {
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
            try await workerLeft(peer, reason: "reconnected")
        }
        let record = workers.register(routingID: peer, hello: hello, now: .now)
        if hello.acceptsBatches { io.batchingPeers.insert(peer) }
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

    func workerReady(_ ready: Tributary_V1_WorkerReady, from peer: Data) async throws {
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

    func jobFailed(_ failure: Tributary_V1_JobFailed, from peer: Data) async throws {
        let worker = try requireWorker(peer)
        try Intake.requireInt64(failure.jobID, "job_id")
        logger.warning(
            "job failed",
            metadata: ["job": "\(failure.jobID)", "worker": "\(worker.id)", "error": "\(failure.message)"])
        let failed: FailedAttempt?
        do {
            failed = try await writer.write(
                .failAttempt(
                    job: Int64(failure.jobID), attempt: Int(failure.attempt), worker: worker.id,
                    message: failure.message, permanent: failure.permanent))
        } catch let error as StoreError where error.code == .unwritable {
            // The worker does not send it again: kept, and written once the store can be.
            workers.pendingFailures.append((failure, peer))
            return
        }
        if let failed {
            logger.notice("job attempt failed", metadata: ["job": "\(failure.jobID)", "outcome": "\(failed.outcome)"])
            attemptsFailed([failed])
            // A job going back to the queue did not end: its state goes on the feed all the same.
            if failed.outcome != .dead { await publishProgress(ofJobs: [failed.id]) }
        }
        workers[peer]?.jobs[Int64(failure.jobID)] = nil
    }

    /// Writes the failures reported while the store could not be written, once it can. A worker that left meanwhile
    /// had its jobs handed back as it left: its failures are dropped.
    func retryPendingFailures() async {
        guard !workers.pendingFailures.isEmpty, store.writer.writability.fault() == nil else { return }
        let pending = workers.pendingFailures
        workers.pendingFailures = []
        for (failure, peer) in pending where workers[peer] != nil {
            do {
                try await jobFailed(failure, from: peer)
            } catch {
                logger.error(
                    "cannot record a job's failure", metadata: ["job": "\(failure.jobID)", "error": "\(error)"])
            }
        }
    }

    /// Forgets a worker and returns its jobs to the queue.
    /// - Parameter handsBack: the worker gave back the jobs it did not finish (a goodbye, after its running jobs
    ///   ended or were interrupted at its shutdown timeout), or its process exited during the pool's graceful stop:
    ///   they go back without counting an attempt. Otherwise each running job's attempt counts as failed.
    func workerLeft(_ peer: Data, reason: String, handsBack: Bool = false) async throws {
        guard let worker = workers[peer] else { return }
        // No new jobs for it from here on, even from a dispatch or a commit answered while this one awaits.
        workers[peer]?.credit = 0
        workers[peer]?.leaving = true
        // Re-queue first: if the store refuses, the worker stays known and the next reap tries again. Only the
        // jobs it was given count as lost attempts; any claimed for it and not yet sent are handed back.
        let requeued: Int
        do {
            // The metrics follow what the store did: a job whose completing save committed first stays done.
            if handsBack {
                let released = try await writer.write(.releaseJobs(of: worker.id))
                requeued = released.count
                for id in released { jobMetrics.handedBack(job: id) }
            } else {
                let lost = try await writer.write(
                    .requeueJobs(
                        of: worker.id, started: Set(worker.jobs.keys),
                        reason: "attempt lost: worker \(worker.id) \(reason)"))
                requeued = lost.requeued
                attemptsFailed(lost.failed)
            }
        } catch {
            if workers[peer]?.id == worker.id { workers[peer]?.leaving = false }
            throw error
        }
        if workers[peer]?.id == worker.id {
            workers.remove(peer)
            io.batchingPeers.remove(peer)
        }
        // A claim for this worker that committed after the re-queue above finds it gone and hands its jobs back
        // itself; this catches one whose result was applied here before the worker was removed.
        _ = try await writer.write(.releaseJobs(of: worker.id))
        logger.info(
            "worker left", metadata: ["worker": "\(worker.id)", "reason": "\(reason)", "requeued": "\(requeued)"])
        handOver.isDue = true
    }

    /// A local pool process exited: its jobs go back at once rather than after its heartbeats lapse.
    /// Matched by pid and pool name, so a remote worker that happens to have the same pid is left alone. During the
    /// pool's graceful stop, its jobs go back without counting an attempt, as its goodbye would have had them (the
    /// exit may be handled before the goodbye arrives, and a worker killed at the stop's end sent none).
    func workerProcessExited(pid: Int32, name: String) async {
        guard let peer = workers.routingID(ofPID: pid, name: name) else { return }
        do {
            try await workerLeft(
                peer, reason: "process \(pid) exited", handsBack: snapshot.poolStopBegan != nil)
        } catch {
            logger.error("cannot re-queue the jobs of an exited worker", metadata: ["error": "\(error)"])
        }
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

    func reapSilentWorkers() async {
        // Silence is judged as of the socket's last read: a loop held up (a commit run on its thread) read nothing.
        for candidate in workers.expired(now: io.loop.lastPolled, liveness: configuration.liveness) {
            // Re-checked each time: the awaits below let other messages (a late heartbeat) in.
            guard let worker = workers[candidate.routingID], worker.id == candidate.id,
                workers.isExpired(worker, now: io.loop.lastPolled, liveness: configuration.liveness)
            else { continue }
            do {
                try await workerLeft(worker.routingID, reason: "missed \(configuration.liveness) heartbeats")
            } catch {
                logger.error("cannot re-queue the jobs of a silent worker", metadata: ["error": "\(error)"])
            }
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
