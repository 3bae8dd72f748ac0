import Foundation
import TributaryProtocol

/// Leasing queued jobs to workers that have credit.
extension CoordinatorServer {
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

    /// Sends claimed jobs to the worker they were claimed for, giving back the credit the claim left unused; the
    /// jobs go back to the queue when the worker left (or registered anew) while the claim was written.
    private func assign(_ jobs: [ClaimedJob], to peer: Data, claimedFor worker: WorkerRecord, wanted: Int) async throws
    {
        if !send(jobs, to: peer, claimedFor: worker, wanted: wanted) { try await store.releaseJobs(of: worker.id) }
    }

    /// Sends claimed jobs to the worker they were claimed for and gives back the credit the claim left unused.
    /// - Returns: false when the worker left (or registered anew) while the claim was written: nothing was sent,
    ///   and its jobs are to go back to the queue.
    func send(_ jobs: [ClaimedJob], to peer: Data, claimedFor worker: WorkerRecord, wanted: Int) -> Bool {
        giveBack(wanted - jobs.count, to: peer, of: worker)
        guard !jobs.isEmpty else { return true }
        guard workers[peer]?.id == worker.id else { return false }
        for job in jobs {
            workers[peer]?.jobs.insert(job.id)
            let assignment = Tributary_V1_JobAssignment.with {
                $0.jobID = UInt64(job.id)
                $0.attempt = UInt32(clamping: job.attempt)
                $0.spec = job.spec
                $0.committedBatches = UInt32(clamping: job.committedBatches)
            }
            replyOrGather(to: peer, requestID: 0, .jobAssignment(assignment))
        }
        return true
    }

    /// Takes up to one claim's worth of a worker's credit, for a claim about to be written.
    func takeClaimCredit(_ peer: Data, _ worker: WorkerRecord) -> Int {
        let wanted = min(Int(worker.credit), Self.claimsPerTransaction)
        workers[peer]?.credit -= UInt32(wanted)
        return wanted
    }

    /// Gives back credit a claim did not use, unless the worker left (or registered anew) meanwhile.
    func giveBack(_ credit: Int, to peer: Data, of worker: WorkerRecord) {
        if credit > 0, workers[peer]?.id == worker.id, workers[peer]?.leaving == false {
            workers[peer]?.credit += UInt32(credit)
        }
    }
}
