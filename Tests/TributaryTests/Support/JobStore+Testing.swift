import Foundation
import GRDB
import TributaryCore

@testable import TributaryCoordinator

/// The job engine's writes run straight on the writer connection, each in a transaction of its own, for tests of
/// the store without a coordinator (in the coordinator, ``StoreWriter`` runs them in its queue's order).
extension JobStore {
    /// Enqueues jobs.
    func pushJobs(_ specs: [JobSpec], batch: String, onComplete: JobSpec? = nil) async throws -> PushedJobs {
        let now = Date().timeIntervalSince1970
        return try await transaction { db in
            try self.pushJobs(specs, batch: batch, onComplete: onComplete, now: now, in: db)
        }
    }

    /// Leases the oldest queued job to `worker`.
    func claimJob(for worker: String, kinds: [String], queues: [String] = [JobQueue.defaultName])
        async throws -> ClaimedJob?
    {
        try await claimJobs(for: worker, kinds: kinds, queues: queues, limit: 1).first
    }

    /// Leases up to `limit` queued jobs to `worker`.
    func claimJobs(
        for worker: String, kinds: [String], queues: [String] = [JobQueue.defaultName], limit: Int,
        runLimits: RunLimits = RunLimits()
    ) async throws -> [ClaimedJob] {
        try await transaction { db in
            try self.claimJobs(for: worker, kinds: kinds, queues: queues, limit: limit, runLimits: runLimits, in: db)
        }
    }

    @discardableResult
    func failJob(id: Int64, attempt: Int, worker: String, message: String, permanent: Bool) async throws
        -> FailedAttempt?
    {
        try await transaction { db in
            try self.failJob(id: id, attempt: attempt, worker: worker, message: message, permanent: permanent, in: db)
        }
    }

    @discardableResult
    func requeueJobs(of worker: String, started: Set<Int64>? = nil, reason: String = "its worker was lost")
        async throws -> Int
    {
        try await requeueJobsNamingFailed(of: worker, started: started, reason: reason).requeued
    }

    func requeueJobsNamingFailed(
        of worker: String, started: Set<Int64>? = nil, reason: String = "its worker was lost"
    ) async throws -> (requeued: Int, failed: [FailedAttempt]) {
        try await transaction { db in
            try self.requeueJobsNamingFailed(of: worker, started: started, reason: reason, in: db)
        }
    }

    @discardableResult
    func releaseJobs(of worker: String) async throws -> Int {
        try await transaction { db in try self.releaseJobsNamingThem(of: worker, in: db) }.count
    }

    @discardableResult
    func pruneFinishedJobs(before cutoff: Date, limit: Int = .max) async throws -> Int {
        try await transaction { db in try self.pruneFinishedJobs(before: cutoff, limit: limit, in: db) }
    }

    func failTimedOutAttempts(now: Date = Date()) async throws -> [TimedOutAttempt] {
        try await transaction { db in try self.failTimedOutAttempts(now: now, in: db) }
    }

    @discardableResult
    func releaseAllRunningJobs() async throws -> Int {
        try await transaction { db in try self.releaseAllRunningJobs(in: db) }
    }

    func retryJob(id: Int64) async throws -> (job: JobInfo, settled: [JobEnding])? {
        try await transaction { db in try self.retryJob(id: id, in: db) }
    }

    func cancelJob(id: Int64) async throws -> (before: JobInfo, endings: [JobEnding])? {
        try await transaction { db in try self.cancelJob(id: id, in: db) }
    }

    func deleteJob(id: Int64) async throws -> JobInfo? {
        try await transaction { db in try self.deleteJob(id: id, in: db) }
    }

    func putSchedule(_ spec: ScheduleSpec, replace: Bool = false) async throws -> ScheduleInfo {
        try await transaction { db in try self.putSchedule(spec, replace: replace, in: db) }
    }

    func setSchedule(_ name: String, paused: Bool) async throws -> ScheduleInfo? {
        try await transaction { db in try self.setSchedule(name, paused: paused, in: db) }
    }

    func deleteSchedule(_ name: String) async throws -> ScheduleInfo? {
        try await transaction { db in try self.deleteSchedule(name, in: db) }
    }

    func fireDueSchedules(now: Double = Date().timeIntervalSince1970, catchingUp: Bool) async throws -> FiredTicks {
        try await transaction { db in try self.fireDueSchedules(now: now, catchingUp: catchingUp, in: db) }
    }

    /// Pauses or resumes a named queue; whether that changed anything.
    @discardableResult
    func setQueue(_ name: String, paused: Bool) async throws -> Bool {
        try await transaction { db in try self.setQueue(name, paused: paused, in: db) }
    }

    /// What a restarted coordinator does with the jobs its predecessor left running.
    func requeueAfterRestart(sparing prefix: String? = nil) async throws -> [JobsLeftRunning] {
        try await transaction { db in try Self.requeueAfterRestart(db, sparing: prefix) }
    }

    /// Leases the attempts a worker still runs to its new id `worker`, as a coordinator whose ids start with
    /// `prefix` does.
    func adoptJobs(_ held: [HeldAttempt], from previous: [String], grantedBefore prefix: String = "", to worker: String)
        async throws -> [Int64]
    {
        try await transaction { db in
            try Self.adoptJobs(
                held, from: previous, grantedBefore: prefix, to: worker, in: db, statements: self.writer.statements)
        }
    }

    /// Runs `body` in a write transaction of its own on the writer connection.
    private func transaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.writeWithoutTransaction { db in try self.writer.statements.transaction(db) { try body(db) } }
    }
}

/// The change history's writes, for tests of the store without a coordinator.
extension FeedStore {
    @discardableResult
    func pruneHistory(before cutoff: Date?, keepingNewest keep: Int?, limit: Int = 2_000) async throws -> Int {
        try await pool.write { db in try self.pruneHistory(before: cutoff, keepingNewest: keep, limit: limit, in: db) }
    }

    @discardableResult
    func updateSubscriber(name: String, position: UInt64, registerOnly: Bool = false) async throws
        -> DurableSubscriber
    {
        try await pool.write { db in
            try self.updateSubscriber(
                name: name, position: FeedPosition(seq: position), registerOnly: registerOnly, in: db)
        }
    }

    @discardableResult
    func deleteSubscriber(name: String) async throws -> DurableSubscriber {
        try await pool.write { db in try self.deleteSubscriber(name: name, in: db) }
    }
}
