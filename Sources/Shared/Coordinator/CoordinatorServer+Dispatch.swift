import Foundation

/// Leasing queued jobs to workers that have credit.
extension CoordinatorServer {
    /// The most jobs leased to one worker in one transaction.
    static let claimsPerTransaction = 256

    /// Leases queued jobs to workers with credit, in turn, until one or the other runs out.
    ///
    /// The actor is re-entrant at each `await`, so a dispatch requested while one runs is folded into it, and a
    /// worker's credit is taken before the claim is awaited.
    func dispatch() async throws {
        guard !stopping else { return }
        guard !dispatching else {
            dispatchRequested = true
            return
        }
        dispatching = true
        defer { dispatching = false }
        repeat {
            dispatchRequested = false
            try await dispatchRound()
        } while dispatchRequested && !stopping
    }

    /// The last group commit of a turn of messages. When jobs may go out (credit or new jobs arrived), each worker
    /// with credit gets its claim in the same transaction, so a turn that finishes jobs and leases the next ones
    /// commits once; a worker whose claim came back full may have more waiting, and a dispatch goes on for it.
    func commitAndDispatch(_ group: inout SaveGroup) async {
        guard needsDispatch else { return await commit(&group) }
        needsDispatch = false
        guard !stopping, !dispatching else {
            await commit(&group)
            await dispatchLoggingErrors()
            return
        }
        let claims = takeCredit()
        guard !claims.isEmpty else { return await commit(&group) }
        let members = group.members
        group = SaveGroup()
        // Claims are being written: a dispatch asked for meanwhile waits for this one (`dispatchRequested`).
        dispatching = true
        let outcome: (saves: [Result<AppliedSave, any Error>], claims: [Result<[ClaimedJob], any Error>])
        do {
            outcome = try await store.applySaves(members.map { ($0.save, $0.worker) }, thenClaim: claims.map(\.request))
        } catch {
            logger.error(
                "group commit failed",
                metadata: ["saves": "\(members.count)", "claims": "\(claims.count)", "error": "\(error)"])
            outcome = (members.map { _ in .failure(error) }, claims.map { _ in .failure(error) })
        }
        dispatching = false
        answer(members, outcome.saves)
        var goOn = dispatchRequested
        for (claim, result) in zip(claims, outcome.claims) {
            switch result {
            case .success(let jobs):
                do {
                    try await assign(jobs, to: claim.peer, claimedFor: claim.worker, wanted: claim.request.limit)
                } catch {
                    logger.error("cannot hand back the jobs of a worker that left", metadata: ["error": "\(error)"])
                }
                goOn = goOn || (jobs.count == claim.request.limit && (workers[claim.peer]?.credit ?? 0) > 0)
            case .failure(let error):
                giveBack(claim.request.limit, to: claim.peer, of: claim.worker)
                logger.error("claim failed", metadata: ["worker": "\(claim.worker.id)", "error": "\(error)"])
            }
        }
        if goOn { await dispatchLoggingErrors() }
    }

    private func dispatchLoggingErrors() async {
        do {
            try await dispatch()
        } catch {
            logger.error("dispatch failed", metadata: ["error": "\(error)"])
        }
    }

    /// Takes the credit of each worker that has some, up to one claim's worth, for claims about to be written.
    private func takeCredit() -> [(peer: Data, worker: WorkerRecord, request: ClaimRequest)] {
        var claims: [(peer: Data, worker: WorkerRecord, request: ClaimRequest)] = []
        while let peer = workers.nextWithCredit(excluding: Set(claims.map(\.peer))), let worker = workers[peer] {
            let wanted = takeClaimCredit(peer, worker)
            claims.append((peer, worker, ClaimRequest(worker: worker.id, kinds: worker.jobKinds, limit: wanted)))
        }
        return claims
    }

    private func dispatchRound() async throws {
        // Workers with nothing they can run this round (no queued job of their kinds) are passed over, so a job
        // only one worker can run still reaches it.
        var idle: Set<Data> = []
        while let peer = workers.nextWithCredit(excluding: idle), let worker = workers[peer] {
            // Claim what this worker has credit for (bounded) in one transaction, then move on to the next.
            let wanted = takeClaimCredit(peer, worker)
            let jobs: [ClaimedJob]
            do {
                jobs = try await store.claimJobs(for: worker.id, kinds: worker.jobKinds, limit: wanted)
            } catch {
                // The worker asked for these jobs; it must not lose the credit because the store refused once.
                giveBack(wanted, to: peer, of: worker)
                throw error
            }
            if jobs.isEmpty { idle.insert(peer) }
            try await assign(jobs, to: peer, claimedFor: worker, wanted: wanted)
        }
    }

    /// Sends claimed jobs to the worker they were claimed for and gives back the credit the claim left unused.
    /// The actor may have run other messages while the claim was written: a worker that left (or registered anew)
    /// meanwhile gets nothing, and the jobs go back to the queue.
    private func assign(_ jobs: [ClaimedJob], to peer: Data, claimedFor worker: WorkerRecord, wanted: Int) async throws
    {
        giveBack(wanted - jobs.count, to: peer, of: worker)
        guard !jobs.isEmpty else { return }
        guard workers[peer]?.id == worker.id else {
            try await store.releaseJobs(of: worker.id)
            return
        }
        for job in jobs {
            workers[peer]?.jobs.insert(job.id)
            let assignment = Tributary_V1_JobAssignment.with {
                $0.jobID = UInt64(job.id)
                $0.attempt = UInt32(clamping: job.attempt)
                $0.spec = job.spec
                $0.committedBatches = UInt32(clamping: job.committedBatches)
            }
            reply(to: peer, requestID: 0, .jobAssignment(assignment))
        }
    }

    /// Takes up to one claim's worth of a worker's credit, for a claim about to be written.
    private func takeClaimCredit(_ peer: Data, _ worker: WorkerRecord) -> Int {
        let wanted = min(Int(worker.credit), Self.claimsPerTransaction)
        workers[peer]?.credit -= UInt32(wanted)
        return wanted
    }

    /// Gives back credit a claim did not use, unless the worker left (or registered anew) meanwhile.
    private func giveBack(_ credit: Int, to peer: Data, of worker: WorkerRecord) {
        if credit > 0, workers[peer]?.id == worker.id { workers[peer]?.credit += UInt32(credit) }
    }
}
