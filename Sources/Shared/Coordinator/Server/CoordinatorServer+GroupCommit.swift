import Foundation
import TributaryProtocol

/// Group commit: saves gather while the writer works, and go to it together once it is free.
///
/// The writer runs one group commit at a time. While it does, the actor goes on reading messages: saves gather in
/// ``pendingSaves``, and credit that comes in marks a dispatch as due. As soon as the writer finishes, the next
/// group is queued (with a claim for each worker that has credit, in the same transaction) and only then is the
/// finished one answered (acks, didSave events, assignments), so the writer works while the actor answers. A
/// commit is noticed as finished between messages, and by a task that waits for it when the actor is idle.
extension CoordinatorServer {
    /// The most saves that gather while the writer is busy; the next one waits for it.
    static let maximumPendingSaves = 1024

    /// The most writes queued on the writer (pushes queue behind group commits); the next push waits.
    static let maximumQueuedWrites = 8

    /// The most jobs leased to one worker in one transaction.
    static let claimsPerTransaction = 256

    /// Gathers a save for the next group commit; waits for the writer first when too many gathered.
    func gather(_ save: Tributary_V1_SaveChanges, from peer: Data, worker: String, requestID: UInt64) async {
        while pendingSaves.count >= Self.maximumPendingSaves, let running = queuedWrites.first {
            await running.written()
            advanceCommits()
        }
        pendingSaves.append(save, from: peer, worker: worker, requestID: requestID)
    }

    /// Moves group commits along without waiting: answers each write the writer finished, in order, and hands
    /// the writer what gathered once it is free.
    func advanceCommits() {
        while let first = queuedWrites.first, first.isWritten {
            queuedWrites.removeFirst()
            // The writer takes the next group before this write is answered, and works on it meanwhile.
            if queuedWrites.isEmpty { queuePendingSaves() }
            switch first {
            case .groupCommit(let commit):
                guard let result = commit.write.result else {
                    assertionFailure("a written group commit has its result")
                    continue
                }
                answering { answer(commit, result) }
            case .push(let push): push.write.result.map { answer(push, $0) }
            }
        }
        if queuedWrites.isEmpty { queuePendingSaves() }
    }

    /// Queues a write on the writer behind the group commits, answered in turn (``advanceCommits()``).
    func queue(_ write: QueuedWrite) {
        queuedWrites.append(write)
        // Unstructured: it wakes the actor when the write is done while no message does; the write itself is
        // owned by the writer queue and by `queuedWrites`, which a stop waits for, so nothing is lost with it.
        Task {
            await write.written()
            self.advanceCommits()
        }
    }

    /// Queues the saves received so far, even while the writer is busy, and answers every write queued by then;
    /// saves received meanwhile are answered in turn. A stop waits for this: it ends even while workers go on
    /// saving.
    func commitReceived() async {
        queuePendingSaves()
        guard let last = queuedWrites.last else { return }
        await last.written()
        advanceCommits()
    }

    /// Commits and answers every save received so far: before a message that must see their effects.
    func commitAll() async {
        advanceCommits()
        while let running = queuedWrites.first {
            await running.written()
            advanceCommits()
        }
    }

    /// Queues the gathered saves on the writer as one group commit, with claims for the workers' credit when a
    /// dispatch is due (jobs or credit came in).
    func queuePendingSaves() {
        var claims: [QueuedCommit.Claim] = []
        if needsDispatch {
            needsDispatch = false
            if dispatching {
                // A dispatch round is running (a timer's, say): it goes on for this credit once it ends.
                dispatchRequested = true
            } else if !stopping {
                claims = takeCredit()
            }
        }
        guard !pendingSaves.isEmpty || !claims.isEmpty else { return }
        let members = pendingSaves.members
        pendingSaves = SaveGroup()
        let write = store.queueGroupCommit(members.map { ($0.save, $0.worker) }, thenClaim: claims.map(\.request))
        queue(.groupCommit(QueuedCommit(members: members, claims: claims, write: write)))
    }

    /// Answers a finished group commit: its saves, then its claims' assignments. A claim that came back full, for a
    /// worker with credit left, may have more waiting: a dispatch is due again.
    private func answer(_ commit: QueuedCommit, _ result: GroupCommitResult) {
        answer(commit.members, result.saves)
        for (claim, result) in zip(commit.claims, result.claims) {
            switch result {
            case .success(let jobs):
                if !send(jobs, to: claim.peer, claimedFor: claim.worker, wanted: claim.request.limit) {
                    releaseLater(jobsOf: claim.worker)
                }
                if jobs.count == claim.request.limit, (workers[claim.peer]?.credit ?? 0) > 0 { needsDispatch = true }
            case .failure(let error):
                giveBack(claim.request.limit, to: claim.peer, of: claim.worker)
                logger.error("claim failed", metadata: ["worker": "\(claim.worker.id)", "error": "\(error)"])
            }
        }
    }

    /// Hands back the jobs of a worker that left while they were claimed for it.
    private func releaseLater(jobsOf worker: WorkerRecord) {
        // Unstructured: called while a group commit is answered, which must not wait for a write; if a stop
        // comes first, the next start re-queues what this missed.
        Task {
            do {
                try await store.releaseJobs(of: worker.id)
            } catch {
                logger.error("cannot hand back the jobs of a worker that left", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Takes the credit of each worker that has some, up to one claim's worth, for claims about to be written.
    private func takeCredit() -> [QueuedCommit.Claim] {
        var claims: [QueuedCommit.Claim] = []
        while let peer = workers.nextWithCredit(excluding: Set(claims.map(\.peer))), let worker = workers[peer] {
            let wanted = takeClaimCredit(peer, worker)
            claims.append(
                QueuedCommit.Claim(
                    peer: peer, worker: worker,
                    request: ClaimRequest(worker: worker.id, kinds: worker.jobKinds, limit: wanted)))
        }
        return claims
    }
}
