import Foundation
import TributaryCore
import TributaryProtocol

/// Requests that look at jobs or put dead ones back.
extension CoordinatorServer {
    func listJobs(_ request: Tributary_V1_JobsRequest, from peer: Data, requestID: UInt64) async throws {
        let state = request.state.isEmpty ? nil : try JobState(wire: request.state)
        try Self.requireInt64(request.beforeID, "before_id")
        let limit = request.limit == 0 ? 50 : min(Int(request.limit), 1_000)
        let jobs = try await store.jobs.list(
            state: state, batch: request.batch.isEmpty ? nil : request.batch,
            limit: limit, before: request.beforeID == 0 ? nil : Int64(request.beforeID))
        reply(to: peer, requestID: requestID, .jobsReply(.with { $0.jobs = jobs.map(\.wire) }))
    }

    func showJob(_ id: UInt64, from peer: Data, requestID: UInt64) async throws {
        try Self.requireInt64(id, "job_id")
        guard let job = try await store.jobs.job(id: Int64(id)) else {
            throw ProtocolError(.unknownJob, "job \(id) does not exist", jobID: id)
        }
        var shown = job
        if job.state == .queued { shown.waiting = try await waitingReason(of: job) }
        if job.state == .waiting { shown.waiting = try await store.jobs.parentsReason(of: job.id) }
        reply(to: peer, requestID: requestID, .jobInfo(shown.wire))
    }

    /// Why a queued job has not gone out yet, from what the router knows now: its run-at time, the workers that
    /// serve its queue and kind, the concurrency limits; empty when nothing holds it (it goes with the next claim).
    func waitingReason(of job: JobInfo) async throws -> String {
        var reasons: [String] = []
        if let runAt = job.runAt, runAt > Date() {
            reasons.append("not before \(runAt.formatted(.iso8601)) (a delay or a retry's backoff)")
        }
        let serving = workers.workers.values.filter {
            $0.queues.contains(job.queue) && $0.jobKinds.contains(job.kind) && !$0.leaving
        }
        if serving.isEmpty {
            reasons.append("no connected worker serves queue '\(job.queue)' with kind '\(job.kind)'")
        }
        let limits = configuration.runLimits
        if limits.byKind[job.kind] != nil || limits.byQueue[job.queue] != nil {
            let running = try await store.jobs.runningCounts()
            if let limit = limits.byKind[job.kind], running.byKind[job.kind, default: 0] >= limit {
                reasons.append(
                    "kind:\(job.kind) is at its limit (\(running.byKind[job.kind, default: 0]) running of \(limit))")
            }
            if let limit = limits.byQueue[job.queue], running.byQueue[job.queue, default: 0] >= limit {
                reasons.append(
                    "queue:\(job.queue) is at its limit (\(running.byQueue[job.queue, default: 0]) running of \(limit))"
                )
            }
        }
        let now = Date().timeIntervalSince1970
        for (column, value, rate) in [
            ("kind", job.kind, limits.rateByKind[job.kind]), ("queue", job.queue, limits.rateByQueue[job.queue]),
        ] {
            guard let rate else { continue }
            let started = try await store.jobs.jobsLeased(whereColumn: column, is: value, since: now - rate.seconds)
            if started >= rate.count {
                reasons.append(
                    "\(column):\(value) is at its rate limit (\(started) started in the last \(rate.seconds) s)")
            }
        }
        for limit in limits.perArgument where limit.target.covers(kind: job.kind, queue: job.queue) {
            let value = job.arguments[limit.argument] ?? ""
            let used = try await store.jobs.usage(of: limit, value: value, now: now)
            if used >= limit.count {
                reasons.append(
                    limit.rate.map {
                        "\(limit.name)=\(value) is at its rate limit (\(used) started in the last \($0.seconds) s)"
                    } ?? "\(limit.name)=\(value) is at its limit (\(used) running of \(limit.count))")
            }
        }
        if reasons.isEmpty, !serving.isEmpty, serving.allSatisfy({ $0.credit == 0 }) {
            reasons.append("every worker that serves it is busy (\(serving.count) workers)")
        }
        return reasons.joined(separator: "; ")
    }

    func retryJob(_ id: UInt64, from peer: Data, requestID: UInt64) async throws {
        try Self.requireInt64(id, "job_id")
        let retried: (job: JobInfo, settled: [JobEnding])?
        do {
            retried = try await writer.write(.retryJob(id: Int64(id)))
        } catch let error as StoreError where error.code == .constraint {
            throw ProtocolError(.invalidRequest, error.message, jobID: id)
        }
        guard let retried else { throw ProtocolError(.unknownJob, "job \(id) does not exist", jobID: id) }
        logger.info("dead job retried", metadata: ["job": "\(id)"])
        // A child retried while a parent is still failed is settled again at once.
        jobsEnded(retried.settled)
        reply(to: peer, requestID: requestID, .jobInfo(retried.job.wire))
        needsDispatch = true
    }

    func cancelJob(_ id: UInt64, from peer: Data, requestID: UInt64) async throws {
        try Self.requireInt64(id, "job_id")
        let cancelled: (before: JobInfo, endings: [JobEnding])?
        do {
            cancelled = try await writer.write(.cancelJob(id: Int64(id)))
        } catch let error as StoreError where error.code == .constraint {
            throw ProtocolError(.invalidRequest, error.message, jobID: id)
        }
        guard let (before, endings) = cancelled else {
            throw ProtocolError(.unknownJob, "job \(id) does not exist", jobID: id)
        }
        if before.state == .running, let holder = workers.routingID(holding: Int64(id)) {
            workers[holder]?.jobs[Int64(id)] = nil
            reply(
                to: holder, requestID: 0,
                .cancelJob(
                    .with {
                        $0.jobID = id
                        $0.attempt = UInt32(clamping: before.attempt)
                    }))
        }
        jobsEnded(endings)
        // Cancelling may have finished a batch whose callback job is now queued.
        needsDispatch = true
        logger.info("job cancelled", metadata: ["job": "\(id)", "was": "\(before.state.rawValue)"])
        var after = before
        after.state = .cancelled
        after.worker = nil
        reply(to: peer, requestID: requestID, .jobInfo(after.wire))
    }

    func deleteJob(_ id: UInt64, from peer: Data, requestID: UInt64) async throws {
        try Self.requireInt64(id, "job_id")
        let job: JobInfo?
        do {
            job = try await writer.write(.deleteJob(id: Int64(id)))
        } catch let error as StoreError where error.code == .constraint {
            throw ProtocolError(.invalidRequest, error.message, jobID: id)
        }
        guard let job else { throw ProtocolError(.unknownJob, "job \(id) does not exist", jobID: id) }
        logger.info("job deleted", metadata: ["job": "\(id)", "state": "\(job.state.rawValue)"])
        reply(to: peer, requestID: requestID, .jobInfo(job.wire))
    }
}
