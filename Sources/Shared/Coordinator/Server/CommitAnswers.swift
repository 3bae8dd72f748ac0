import Foundation
import Logging
import TributaryCore
import TributaryProtocol

/// The last stage of the commit pipeline, in the router's turn: the writes the pipeline released, answered in the
/// order written. A group commit's saves are acknowledged (their didSave published) and its claims' jobs sent, their
/// replies gathered to leave together; a push is answered with its jobs' ids; the router's own writes run their
/// follow-ups (``FollowUps``). Then the reads waiting for them go on.
///
/// Owned by the router (``CoordinatorServer``) and used only in its turn.
final class CommitAnswers {
    let sessions: WorkerSessions
    var replies: PeerReplies { sessions.replies }
    var parts: CoordinatorParts { sessions.parts }
    var logger: Logger { sessions.logger }

    init(sessions: WorkerSessions) {
        self.sessions = sessions
    }

    /// Answers the writes the pipeline released, in the order written, then lets the reads waiting for them go on.
    func answerReleased() {
        let pipeline = parts.writer.pipeline
        let released = pipeline.takeAnswers()
        guard !released.isEmpty else { return }
        for write in released {
            switch write.answer {
            case .committed(let commit, let result, let writtenAt)?:
                replies.answering { answer(commit, result, writtenAt: writtenAt) }
            case .pushed(let push, let result)?: answer(push, result)
            case nil: sessions.followUps.take(write.position)?()
            }
        }
        pipeline.answered(released)
        reportWritability()
    }

    /// Logs a change of whether the store can be written (``StoreWritability``); once it can again, held claims go.
    func reportWritability() {
        guard let change = parts.store.writer.writability.check() else { return }
        switch change {
        case .unwritable(let fault):
            logger.error(
                "the store cannot be written: saves, pushes and commands are refused, jobs wait",
                metadata: ["reason": "\(fault.reason)", "store": "\(parts.store.path)"])
        case .writable(let fault):
            logger.notice(
                "the store can be written again",
                metadata: [
                    "after_seconds": "\(Int(fault.since.duration(to: .now).seconds))",
                    "writes_refused": "\(fault.refused)",
                ])
            if sessions.workers.anyHasCredit { sessions.handOver.isDue = true }
        }
    }

    /// Answers a finished group commit: its saves, then its claims' assignments. A claim that came back full, for a
    /// worker with credit left, may have more waiting: a dispatch is due again.
    private func answer(_ commit: QueuedCommit, _ result: GroupCommitResult, writtenAt: ContinuousClock.Instant) {
        answer(commit.members, result.saves, writtenAt: writtenAt)
        sessions.jobsEnded(result.settled)
        for (claim, result) in zip(commit.claims, result.claims) {
            switch result {
            case .success(let jobs):
                if !send(jobs, to: claim.peer, claimedFor: claim.worker, wanted: claim.request.limit) {
                    releaseLater(jobsOf: claim.worker)
                }
                if jobs.count == claim.request.limit, (sessions.workers[claim.peer]?.credit ?? 0) > 0 {
                    sessions.handOver.isDue = true
                }
            case .failure(let error):
                // The worker asked for these jobs; it must not lose the credit because the store refused once.
                sessions.workers.giveBack(claim.request.limit, to: claim.peer, of: claim.worker)
                // A store that cannot be written is logged once, by ``reportWritability()``.
                if (error as? StoreError)?.code != .unwritable {
                    logger.error("claim failed", metadata: ["worker": "\(claim.worker.id)", "error": "\(error)"])
                }
            }
        }
        // A claim that found a rate limit full: a dispatch is due when its window next has room.
        if !commit.claims.isEmpty {
            sessions.handOver.wake(at: parts.store.writer.recentStarts.nextRoom.take(), through: sessions.io)
        }
    }

    /// Answers a push once its jobs are enqueued; they may go out at once.
    private func answer(_ push: QueuedPush.Request, _ result: Result<PushedJobs, any Error>) {
        switch result {
        case .success(let pushed):
            let duplicates = Set(pushed.duplicates)
            sessions.jobMetrics.pushed(
                kinds: push.specs.indices.lazy.filter { !duplicates.contains($0) }.map { push.specs[$0].kind })
            sessions.jobsEnded(pushed.settled)
            replies.send(
                to: push.peer, requestID: push.requestID,
                .pushReply(
                    Tributary_V1_PushReply.with {
                        $0.batch = push.batch
                        $0.jobIds = pushed.ids.map(UInt64.init)
                        $0.duplicates = pushed.duplicates.map(UInt32.init)
                    }))
            sessions.handOver.isDue = true
        case .failure(let error):
            replies.refuse(push.requestID, from: push.peer, error)
        }
    }

    /// Sends claimed jobs to the worker they were claimed for and gives back the credit the claim left unused.
    /// - Returns: false when the worker left (or registered anew) while the claim was written: nothing was sent,
    ///   and its jobs are to go back to the queue.
    private func send(_ jobs: [ClaimedJob], to peer: Data, claimedFor worker: WorkerRecord, wanted: Int) -> Bool {
        sessions.workers.giveBack(wanted - jobs.count, to: peer, of: worker)
        guard !jobs.isEmpty else { return true }
        // A worker leaving (its jobs' re-queue is written behind this commit) is sent nothing more.
        guard let current = sessions.workers[peer], current.id == worker.id, !current.leaving else { return false }
        let now = Date().timeIntervalSince1970
        for job in jobs {
            sessions.workers[peer]?.jobs[job.id] = job.attempt
            sessions.jobMetrics.started(job: job.id, attempt: job.attempt, kind: job.spec.kind, waited: now - job.dueAt)
            let assignment = Tributary_V1_JobAssignment.with {
                $0.jobID = UInt64(job.id)
                $0.attempt = UInt32(clamping: job.attempt)
                $0.spec = job.spec.wire
                $0.committedBatches = UInt32(clamping: job.committedBatches)
            }
            replies.sendOrGather(to: peer, requestID: 0, .jobAssignment(assignment))
        }
        return true
    }

    /// Hands back the jobs of a worker that left while they were claimed for it.
    private func releaseLater(jobsOf worker: WorkerRecord) {
        sessions.followUps.write(.releaseJobs(of: worker.id)) { [logger] result in
            if case .failure(let error) = result {
                logger.error("cannot hand back the jobs of a worker that left", metadata: ["error": "\(error)"])
            }
        }
    }
}
