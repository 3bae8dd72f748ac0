import Foundation

extension CoordinatorServer {
    func workerHello(_ hello: Tributary_V1_WorkerHello, from peer: Data, requestID: UInt64) async throws {
        if stopping { throw ProtocolError(.shuttingDown, "the coordinator is shutting down") }
        if workers[peer] != nil {
            // The same peer said hello again (it restarted its session): its old leases are void.
            try await workerLeft(peer, reason: "reconnected")
        }
        let record = workers.register(routingID: peer, hello: hello, now: .now)
        logger.info(
            "worker joined",
            metadata: ["worker": "\(record.id)", "name": "\(record.name)", "pid": "\(record.pid)"])
        let welcome = Tributary_V1_Welcome.with {
            $0.workerID = record.id
            $0.modelJson = modelJSON
            $0.liveness = configuration.liveness
        }
        reply(to: peer, requestID: requestID, .welcome(welcome))
    }

    func workerReady(_ ready: Tributary_V1_WorkerReady, from peer: Data) async throws {
        try requireWorker(peer)
        workers[peer]?.credit = ready.credit
        try await dispatch()
    }

    func saveChanges(_ save: Tributary_V1_SaveChanges, from peer: Data, requestID: UInt64) async throws {
        let worker = try requireWorker(peer)
        let outcome: SaveOutcome
        do {
            outcome = try await store.applySave(save, from: worker.id)
        } catch let error as LeaseError {
            throw ProtocolError(error.isUnknownJob ? .unknownJob : .staleLease, error.message, jobID: save.jobID)
        } catch let error as StoreError {
            throw ProtocolError(error, jobID: save.jobID)
        }
        var ack = Tributary_V1_SaveAck()
        ack.jobID = save.jobID
        ack.batchIndex = save.batchIndex
        switch outcome {
        case .committed(let seq, let record, let remaps):
            lastSeq = seq
            ack.seq = seq
            ack.remaps = remaps
            publish(record)
        case .committedEmpty(let remaps):
            ack.seq = 0
            ack.remaps = remaps
        case .duplicate(let seq):
            ack.seq = seq
            ack.duplicate = true
        }
        if save.completesJob {
            workers[peer]?.jobs.remove(Int64(save.jobID))
        }
        reply(to: peer, requestID: requestID, .saveAck(ack))
    }

    func jobFailed(_ failure: Tributary_V1_JobFailed, from peer: Data) async throws {
        let worker = try requireWorker(peer)
        logger.warning(
            "job failed",
            metadata: ["job": "\(failure.jobID)", "worker": "\(worker.id)", "error": "\(failure.message)"])
        try await store.failJob(
            id: Int64(failure.jobID), attempt: Int(failure.attempt), worker: worker.id, message: failure.message)
        workers[peer]?.jobs.remove(Int64(failure.jobID))
    }

    /// Forgets a worker and returns its jobs to the queue.
    func workerLeft(_ peer: Data, reason: String) async throws {
        guard let worker = workers.remove(peer) else { return }
        let requeued = try await store.requeueJobs(of: worker.id)
        logger.info(
            "worker left", metadata: ["worker": "\(worker.id)", "reason": "\(reason)", "requeued": "\(requeued)"])
        try await dispatch()
    }

    /// A local pool process exited: its jobs go back at once rather than after its heartbeats lapse.
    public func workerProcessExited(pid: Int32) async {
        guard let peer = workers.routingID(ofPID: pid) else { return }
        try? await workerLeft(peer, reason: "process \(pid) exited")
    }

    func reapSilentWorkers() async {
        for worker in workers.expired(now: .now, liveness: configuration.liveness) {
            try? await workerLeft(worker.routingID, reason: "missed \(configuration.liveness) heartbeats")
        }
    }

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
        while let peer = workers.nextWithCredit(), let worker = workers[peer] {
            workers[peer]?.credit -= 1
            guard let job = try await store.claimJob(for: worker.id, kinds: worker.jobKinds) else {
                if workers[peer] != nil { workers[peer]?.credit += 1 }
                return
            }
            guard workers[peer] != nil else {
                // The worker left while the claim was being written: the job goes straight back.
                try await store.requeueJobs(of: worker.id)
                continue
            }
            workers[peer]?.jobs.insert(job.id)
            let assignment = Tributary_V1_JobAssignment.with {
                $0.jobID = UInt64(job.id)
                $0.attempt = UInt32(job.attempt)
                $0.spec = job.spec
                $0.committedBatches = UInt32(job.committedBatches)
            }
            reply(to: peer, requestID: 0, .jobAssignment(assignment))
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
