import Foundation
import TributaryCore
import TributaryProtocol

/// Handing saves, claims and the router's own writes to the writer, and answering what the commit pipeline released.
///
/// A message's saves gather in ``handOver`` and go to the writer (``StoreWriter``) together once the message is
/// handled, with a claim for each worker that has credit when a dispatch is due; the writer folds them into its
/// next group commit. The router's other writes (a cancel, a failure, a worker's jobs handed back) are queued behind
/// them with what to do once they are answered (``write(_:then:)``). Finished writes come back through the
/// ``CommitPipeline`` and are answered here in the order written: acks and didSave events, then the assignments of
/// the jobs claimed in the same transaction; a push's reply; a write's follow-up. The router never waits for one.
extension CoordinatorServer {
    /// Hands the saves gathered so far to the writer, with claims for workers' credit when a dispatch is due.
    /// Saves the writer no longer takes (it stopped) are refused.
    /// - Parameter moreToCome: more messages of the same wake-up follow: the writer gathers rather than commits
    ///   (see ``StoreWriter/enqueue(_:claims:moreToCome:)``). Without it, what gathered is committed when the store
    ///   is idle, even if this hands over nothing.
    func submit(moreToCome: Bool = false) async {
        let (saves, claims) = handOver.take(
            from: &workers, claiming: !stopping, runLimits: configuration.runLimits,
            writable: store.writer.writability.fault() == nil)
        guard !saves.isEmpty || !claims.isEmpty || !moreToCome else { return }
        guard await writer.enqueue(saves, claims: claims, moreToCome: moreToCome) else {
            for save in saves {
                reply(
                    to: save.peer, requestID: save.requestID,
                    .error(
                        ProtocolError(.shuttingDown, "the coordinator is shutting down", jobID: UInt64(save.save.jobID))
                            .wire))
            }
            return
        }
    }

    /// Queues `write` now, behind the saves handed over before it, and runs `then` with its result once the
    /// pipeline released it and the router answers its place (after the answers of the writes before it). The router
    /// goes on meanwhile.
    func write<Output: Sendable>(
        _ write: StoreWrite<Output>, then: @escaping (Result<Output, any Error>) -> Void
    ) {
        let queued: QueuedOperation<Output>
        do {
            queued = try writer.queue(write)
        } catch is WriterStoppedError {
            return then(.failure(ProtocolError(.shuttingDown, "the coordinator is shutting down")))
        } catch {
            return then(.failure(ProtocolError(.tooManyRequests, "\(error)")))
        }
        answers.follow(queued.position) { then(Result { try queued.released() }) }
    }

    /// Queues `write` for a client's request and answers it with what `reply` makes of the write's result once it is
    /// answered, or with the error that refused it. A store's constraint refusing a job's write is the request's
    /// fault (`INVALID_REQUEST` naming `jobID`).
    func answer<Output: Sendable>(
        after write: StoreWrite<Output>, to peer: Data, requestID: UInt64, jobID: UInt64? = nil,
        _ reply: @escaping (Output) throws -> Tributary_V1_Envelope.OneOf_Body
    ) {
        self.write(write) { [self] result in
            do {
                let body: Tributary_V1_Envelope.OneOf_Body
                do {
                    body = try reply(try result.get())
                } catch let error as StoreError where error.code == .constraint && jobID != nil {
                    throw ProtocolError(.invalidRequest, error.message, jobID: jobID ?? 0)
                }
                self.reply(to: peer, requestID: requestID, body)
            } catch {
                refuse(requestID, from: peer, error)
            }
        }
    }

    /// Answers the writes the pipeline released, in the order written, then lets the reads waiting for them go on.
    func answerReleased() {
        let released = writer.pipeline.takeAnswers()
        guard !released.isEmpty else { return }
        for write in released {
            switch write.answer {
            case .committed(let commit, let result, let writtenAt)?:
                answering { self.answer(commit, result, writtenAt: writtenAt) }
            case .pushed(let push, let result)?: answer(push, result)
            case nil: answers.takeFollowUp(of: write.position)?()
            }
        }
        writer.pipeline.answered(released)
        reportWritability()
    }

    /// Logs a change of whether the store can be written (``StoreWritability``); once it can again, held claims go.
    func reportWritability() {
        if let change = store.writer.writability.check() {
            switch change {
            case .unwritable(let fault):
                logger.error(
                    "the store cannot be written: saves, pushes and commands are refused, jobs wait",
                    metadata: ["reason": "\(fault.reason)", "store": "\(store.path)"])
            case .writable(let fault):
                logger.notice(
                    "the store can be written again",
                    metadata: [
                        "after_seconds": "\(Int(fault.since.duration(to: .now).seconds))",
                        "writes_refused": "\(fault.refused)",
                    ])
                if workers.anyHasCredit { handOver.isDue = true }
            }
        }
    }

    /// Answers a finished group commit: its saves, then its claims' assignments. A claim that came back full, for a
    /// worker with credit left, may have more waiting: a dispatch is due again.
    private func answer(_ commit: QueuedCommit, _ result: GroupCommitResult, writtenAt: ContinuousClock.Instant) {
        answer(commit.members, result.saves, writtenAt: writtenAt)
        jobsEnded(result.settled)
        for (claim, result) in zip(commit.claims, result.claims) {
            switch result {
            case .success(let jobs):
                if !send(jobs, to: claim.peer, claimedFor: claim.worker, wanted: claim.request.limit) {
                    releaseLater(jobsOf: claim.worker)
                }
                if jobs.count == claim.request.limit, (workers[claim.peer]?.credit ?? 0) > 0 { handOver.isDue = true }
            case .failure(let error):
                // The worker asked for these jobs; it must not lose the credit because the store refused once.
                workers.giveBack(claim.request.limit, to: claim.peer, of: claim.worker)
                // A store that cannot be written is logged once, by ``reportWritability()``.
                if (error as? StoreError)?.code != .unwritable {
                    logger.error("claim failed", metadata: ["worker": "\(claim.worker.id)", "error": "\(error)"])
                }
            }
        }
        // A claim that found a rate limit full: a dispatch is due when its window next has room.
        if !commit.claims.isEmpty { handOver.wake(at: store.writer.recentStarts.nextRoom.take(), through: io) }
    }

    /// Answers a push once its jobs are enqueued; they may go out at once.
    private func answer(_ push: QueuedPush.Request, _ result: Result<PushedJobs, any Error>) {
        switch result {
        case .success(let pushed):
            let duplicates = Set(pushed.duplicates)
            jobMetrics.pushed(
                kinds: push.specs.indices.lazy.filter { !duplicates.contains($0) }.map { push.specs[$0].kind })
            jobsEnded(pushed.settled)
            reply(
                to: push.peer, requestID: push.requestID,
                .pushReply(
                    Tributary_V1_PushReply.with {
                        $0.batch = push.batch
                        $0.jobIds = pushed.ids.map(UInt64.init)
                        $0.duplicates = pushed.duplicates.map(UInt32.init)
                    }))
            handOver.isDue = true
        case .failure(let error):
            refuse(push.requestID, from: push.peer, error)
        }
    }

    /// Sends claimed jobs to the worker they were claimed for and gives back the credit the claim left unused.
    /// - Returns: false when the worker left (or registered anew) while the claim was written: nothing was sent,
    ///   and its jobs are to go back to the queue.
    private func send(_ jobs: [ClaimedJob], to peer: Data, claimedFor worker: WorkerRecord, wanted: Int) -> Bool {
        workers.giveBack(wanted - jobs.count, to: peer, of: worker)
        guard !jobs.isEmpty else { return true }
        // A worker leaving (its jobs' re-queue is written behind this commit) is sent nothing more.
        guard let current = workers[peer], current.id == worker.id, !current.leaving else { return false }
        let now = Date().timeIntervalSince1970
        for job in jobs {
            workers[peer]?.jobs[job.id] = job.attempt
            jobMetrics.started(job: job.id, attempt: job.attempt, kind: job.spec.kind, waited: now - job.dueAt)
            let assignment = Tributary_V1_JobAssignment.with {
                $0.jobID = UInt64(job.id)
                $0.attempt = UInt32(clamping: job.attempt)
                $0.spec = job.spec.wire
                $0.committedBatches = UInt32(clamping: job.committedBatches)
            }
            replyOrGather(to: peer, requestID: 0, .jobAssignment(assignment))
        }
        return true
    }

    /// Hands back the jobs of a worker that left while they were claimed for it.
    private func releaseLater(jobsOf worker: WorkerRecord) {
        write(.releaseJobs(of: worker.id)) { [logger] result in
            if case .failure(let error) = result {
                logger.error("cannot hand back the jobs of a worker that left", metadata: ["error": "\(error)"])
            }
        }
    }
}
