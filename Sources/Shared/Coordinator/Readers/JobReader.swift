import Foundation
import TributaryCore
import TributaryProtocol

/// A job as `JobRequest` (`tributary jobs show`, `/api/jobs/{id}`) shows it, read off the router: the store's row,
/// and for a job that has not gone out, why (its parents not done; its queue paused, its run-at time, no worker
/// serving it, a limit reached, every serving worker busy, from the router's state as of its last step).
struct JobReader: Sendable {
    let store: RootStore
    let limits: RunLimits
    let snapshot: RouterSnapshot

    /// The job with its waiting reason.
    /// - Throws: ``ProtocolError`` `UNKNOWN_JOB` when there is none with that id.
    func job(_ id: Int64) async throws -> JobInfo {
        guard var job = try await store.jobs.job(id: id) else {
            throw ProtocolError(.unknownJob, "job \(id) does not exist", jobID: UInt64(id))
        }
        if job.state == .queued { job.waiting = try await waitingReason(of: job) }
        if job.state == .waiting { job.waiting = try await store.jobs.parentsReason(of: job.id) }
        return job
    }

    /// Why a queued job has not gone out yet, from the router's last step: its queue paused, its run-at time, the
    /// workers that serve its queue and kind, the concurrency limits; empty when nothing holds it (it goes with the
    /// next claim).
    func waitingReason(of job: JobInfo) async throws -> String {
        var reasons: [String] = []
        if try await store.jobs.isPaused(queue: job.queue) {
            reasons.append("queue '\(job.queue)' is paused (tributary queues resume \(job.queue))")
        }
        if let runAt = job.runAt, runAt > Date() {
            reasons.append("not before \(runAt.formatted(.iso8601)) (a delay or a retry's backoff)")
        }
        let serving = snapshot.current.workers.values.filter {
            $0.queues.contains(job.queue) && $0.jobKinds.contains(job.kind) && !$0.leaving
        }
        if serving.isEmpty {
            reasons.append("no connected worker serves queue '\(job.queue)' with kind '\(job.kind)'")
        }
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
}
