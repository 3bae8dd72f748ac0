import Foundation
import TributaryCore
import TributaryProtocol

/// Failed attempts and workers leaving: each written behind the saves before it (``FollowUps``), the router going on
/// meanwhile; a worker is forgotten once the store has its jobs back.
extension WorkerSessions {
    /// A worker's failed attempt, written behind the saves before it; the worker stops holding the job once it is.
    /// While the store cannot be written, the failure is kept and written once it can (the worker does not send it
    /// again).
    func failed(_ failure: Tributary_V1_JobFailed, from peer: Data, requestID: UInt64) throws {
        let worker = try requireWorker(peer)
        try Intake.requireInt64(failure.jobID, "job_id")
        logger.warning(
            "job failed",
            metadata: ["job": "\(failure.jobID)", "worker": "\(worker.id)", "error": "\(failure.message)"])
        let write = StoreWrite<FailedAttempt?>.failAttempt(
            job: Int64(failure.jobID), attempt: Int(failure.attempt), worker: worker.id, message: failure.message,
            permanent: failure.permanent)
        followUps.write(write) { [self] result in
            switch result {
            case .failure(let error as StoreError) where error.code == .unwritable:
                workers.pendingFailures.append((failure, peer))
            case .failure(let error):
                replies.refuse(requestID, from: peer, error)
            case .success(let failed):
                if let (failed, requeued) = failed {
                    logger.notice(
                        "job attempt failed", metadata: ["job": "\(failure.jobID)", "outcome": "\(failed.outcome)"])
                    attemptsFailed([failed])
                    // A job going back to the queue did not end: its state goes on the feed all the same.
                    if let requeued { parts.publisher.publish(requeued) }
                }
                workers[peer]?.jobs[Int64(failure.jobID)] = nil
            }
        }
    }

    /// Writes the failures reported while the store could not be written, once it can. A worker that left meanwhile
    /// had its jobs handed back as it left: its failures are dropped.
    /// Also hands back the jobs of workers whose departure the store refused after their peer registered anew.
    func retryRefusedWrites() {
        guard parts.store.writer.writability.fault() == nil else { return }
        let departures = workers.pendingDepartures
        workers.pendingDepartures = []
        for departure in departures {
            handBack(departure.worker, at: departure.peer, reason: departure.reason, handsBack: departure.handsBack)
        }
        guard !workers.pendingFailures.isEmpty else { return }
        let pending = workers.pendingFailures
        workers.pendingFailures = []
        for (failure, peer) in pending where workers[peer] != nil {
            do {
                try failed(failure, from: peer, requestID: 0)
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
    func left(_ peer: Data, reason: String, handsBack: Bool = false) {
        guard let worker = workers[peer], !worker.leaving else { return }
        workers[peer]?.credit = 0
        workers[peer]?.leaving = true
        handBack(worker, at: peer, reason: reason, handsBack: handsBack)
    }

    /// Writes `worker`'s jobs back to the queue, then forgets it. If the store refuses, a worker still registered
    /// stays known (the next reap tries again); one whose peer registered anew meanwhile is kept aside and tried
    /// again once the store can be written.
    func handBack(_ worker: WorkerRecord, at peer: Data, reason: String, handsBack: Bool) {
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
            followUps.write(.releaseJobs(of: worker.id)) { [self] result in
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
            followUps.write(write) { [self] result in
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
    func processExited(pid: Int32, name: String) {
        guard let peer = workers.routingID(ofPID: pid, name: name) else { return }
        left(peer, reason: "process \(pid) exited", handsBack: parts.snapshot.poolStopBegan != nil)
    }

    /// Counts failed attempts, and the jobs that ended of them (``jobsEnded(_:published:)``).
    func attemptsFailed(_ failures: [FailedAttempt]) {
        for failure in failures {
            jobMetrics.attemptFailed(job: failure.id, attempt: failure.attempt)
            jobsEnded(failure.endings)
        }
    }

    /// Tells the workers of attempts that timed out (maintenance failed them in the store) to stop them.
    func attemptsExpired(_ attempts: [JobStore.TimedOutAttempt]) {
        // A retry, or a batch callback (a death may finish a batch), may be waiting.
        if !attempts.isEmpty { handOver.isDue = true }
        attemptsFailed(attempts.map(\.failure))
        for expired in attempts { stop(job: expired.jobID, attempt: expired.attempt) }
    }

    /// Forgets the workers whose heartbeats lapsed, handing their jobs back with an attempt counted.
    func reapSilentWorkers() {
        // Silence is judged as of the socket's last read: a loop held up read nothing.
        for worker in workers.expired(now: io.loop.lastPolled, liveness: configuration.liveness) {
            left(worker.routingID, reason: "missed \(configuration.liveness) heartbeats")
        }
    }
}
