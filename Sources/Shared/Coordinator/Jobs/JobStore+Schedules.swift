import Foundation
import GRDB
import TributaryCore

/// Periodic jobs: schedules kept in `tributary_schedules`, each with the next tick it has not fired yet. Firing a
/// tick inserts its job and moves `next_tick` past it in one transaction, and the job carries (schedule, tick) under
/// a unique index, so a tick enqueues one job however often the coordinator stops, crashes or fires at once.
extension JobStore {
    /// What firing the due ticks did.
    public struct FiredTicks: Sendable, Equatable {
        /// The jobs enqueued.
        public var jobs: [Int64] = []
        /// Ticks passed over (missed ticks a policy does not run).
        public var skipped = 0
        /// The earliest tick of an active schedule still to fire (seconds since 1970), if any.
        public var next: Double?
    }

    /// Most ticks read past per schedule in one firing; a schedule further behind jumps to its next tick after now.
    static let maxTicksScanned = 100_000

    /// Adds a schedule, or replaces the one of that name when `replace` (keeping its counts and its paused state).
    /// Its first tick is the first after now.
    /// - Throws: ``StoreError`` when it exists and `replace` is false, or its expression or zone is bad.
    func putSchedule(_ spec: ScheduleSpec, replace: Bool, in db: Database) throws -> ScheduleInfo {
        let cron = try Self.cron(of: spec)
        let now = Date().timeIntervalSince1970
        let next = cron.nextTick(after: now) ?? 0
        let exists =
            try Bool.fetchOne(
                db, sql: "SELECT 1 FROM tributary_schedules WHERE name = ?", arguments: [spec.name]) ?? false
        if exists && !replace {
            throw StoreError(
                .constraint, "schedule '\(spec.name)' exists; replace it (--replace) or delete it first")
        }
        try db.execute(
            sql: """
                INSERT INTO tributary_schedules (name, cron, timezone, missed, job, next_tick, created_at, updated_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
                ON CONFLICT (name) DO UPDATE SET cron = ?2, timezone = ?3, missed = ?4, job = ?5, next_tick = ?6,
                    updated_at = ?7
                """,
            arguments: [
                spec.name, spec.cron, spec.timeZone, spec.missed.rawValue, StoredJobSpec(spec.job).json, next, now,
            ])
        return try Self.schedule(named: spec.name, in: db)!
    }

    /// Every schedule, by name.
    public func schedules() async throws -> [ScheduleInfo] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM tributary_schedules ORDER BY name").compactMap(Self.scheduleInfo)
        }
    }

    /// Pauses a schedule (its ticks fire nothing until it resumes), or resumes it at its next tick after now.
    /// - Returns: the schedule as it is now, or nil when there is none of that name.
    func setSchedule(_ name: String, paused: Bool, in db: Database) throws -> ScheduleInfo? {
        let now = Date().timeIntervalSince1970
        guard let info = try Self.schedule(named: name, in: db) else { return nil }
        guard info.paused != paused else { return info }
        let next = paused ? info.nextTick : (try Self.cron(of: info.spec).nextTick(after: now) ?? 0)
        try db.execute(
            sql: "UPDATE tributary_schedules SET paused = ?, next_tick = ?, updated_at = ? WHERE name = ?",
            arguments: [paused, next, now, name])
        return try Self.schedule(named: name, in: db)
    }

    /// Deletes a schedule; the jobs it enqueued stay.
    /// - Returns: the schedule as it was, or nil when there is none of that name.
    func deleteSchedule(_ name: String, in db: Database) throws -> ScheduleInfo? {
        guard let info = try Self.schedule(named: name, in: db) else { return nil }
        try db.execute(sql: "DELETE FROM tributary_schedules WHERE name = ?", arguments: [name])
        return info
    }

    /// Enqueues a job for each due tick of each active schedule, as its missed-tick policy says, in one transaction.
    /// - Parameter catchingUp: the first firing since the coordinator started: ticks due now fell due while no
    ///   coordinator ran, and follow each schedule's policy (``MissedTicks``). Later, ticks that came due together
    ///   (the writer was busy) fire as one job, the latest, unless the policy is `all`.
    func fireDueSchedules(now: Double = Date().timeIntervalSince1970, catchingUp: Bool, in db: Database) throws
        -> FiredTicks
    {
        let next = try Self.nextTick(in: db)
        if next.map({ $0 > now }) ?? true { return FiredTicks(next: next) }
        var fired = FiredTicks()
        let due = try Row.fetchAll(
            db,
            sql:
                "SELECT * FROM tributary_schedules WHERE NOT paused AND next_tick > 0 AND next_tick <= ? ORDER BY name",
            arguments: [now])
        for row in due {
            guard let info = Self.scheduleInfo(row), let cron = try? Self.cron(of: info.spec) else { continue }
            var ticks: [Double] = []
            var tick = info.nextTick
            while tick > 0, tick <= now, ticks.count < Self.maxTicksScanned {
                ticks.append(tick)
                tick = cron.nextTick(after: tick) ?? 0
            }
            if tick > 0, tick <= now { tick = cron.nextTick(after: now) ?? 0 }
            let firing: ArraySlice<Double> =
                switch (info.spec.missed, catchingUp) {
                case (.all, _): ticks.suffix(ScheduleSpec.maxCatchUp)
                case (.skip, true): []
                default: ticks.suffix(1)
                }
            var (lastJob, lastTick, enqueued) = (info.lastJobID, Double?.none, 0)
            // A tick that has its job already (a clock stepped back, a schedule re-added under its name) enqueues
            // nothing and is not counted as fired.
            for at in firing {
                guard let id = try Self.fire(info.spec, tick: at, now: now, in: db) else { continue }
                fired.jobs.append(id)
                (lastJob, lastTick, enqueued) = (id, at, enqueued + 1)
            }
            let skipped = ticks.count - firing.count
            fired.skipped += skipped
            try db.execute(
                sql: """
                    UPDATE tributary_schedules SET next_tick = ?, last_tick = coalesce(?, last_tick), last_job = ?,
                        fired = fired + ?, skipped = skipped + ?, updated_at = ? WHERE name = ?
                    """,
                arguments: [tick, lastTick, lastJob, enqueued, skipped, now, info.spec.name])
        }
        fired.next = try Self.nextTick(in: db)
        return fired
    }

    /// The earliest next tick of an active schedule (seconds since 1970), read on a reader: most looks find
    /// nothing due, and say so without taking the writer.
    public func nextScheduleTick() async throws -> Double? {
        try await pool.read { db in try Self.nextTick(in: db) }
    }

    /// The earliest next tick of an active schedule.
    private static func nextTick(in db: Database) throws -> Double? {
        try Double.fetchOne(
            db, sql: "SELECT MIN(next_tick) FROM tributary_schedules WHERE NOT paused AND next_tick > 0")
    }

    /// Enqueues the job of `spec`'s tick `at`, unless one was enqueued for it before.
    /// - Returns: the job's id, or nil when the tick had its job already.
    private static func fire(_ spec: ScheduleSpec, tick at: Double, now: Double, in db: Database) throws -> Int64? {
        let exists = try db.cachedStatement(sql: "SELECT 1 FROM tributary_jobs WHERE schedule = ? AND tick = ?")
        if try Bool.fetchOne(exists, arguments: [spec.name, at]) == true { return nil }
        var job = spec.job
        job.arguments["schedule"] = spec.name
        job.arguments["tick"] = Self.tickText(at)
        return try StoredJobSpec.insert(job, batch: "schedule/\(spec.name)", now: now, tick: (spec.name, at), in: db)
    }

    /// A tick as its job's `tick` argument: seconds since 1970, whole when it is.
    static func tickText(_ tick: Double) -> String {
        tick == tick.rounded() && abs(tick) < 1e15 ? String(Int64(tick)) : String(tick)
    }

    private static func cron(of spec: ScheduleSpec) throws -> CronSchedule {
        do {
            return try spec.cronSchedule()
        } catch let error as CronError {
            throw StoreError(.invalidRequest, "schedule '\(spec.name)': \(error.description)")
        }
    }

    static func schedule(named name: String, in db: Database) throws -> ScheduleInfo? {
        try Row.fetchOne(db, sql: "SELECT * FROM tributary_schedules WHERE name = ?", arguments: [name])
            .flatMap(scheduleInfo)
    }

    /// A schedule row as ``ScheduleInfo``; nil when a later version wrote what this one cannot read.
    private static func scheduleInfo(_ row: Row) -> ScheduleInfo? {
        guard let job = StoredJobSpec.decode(row["job"]), let missed = MissedTicks(rawValue: row["missed"]) else {
            return nil
        }
        return ScheduleInfo(
            spec: ScheduleSpec(
                name: row["name"], cron: row["cron"], timeZone: row["timezone"], missed: missed, job: job),
            paused: row["paused"], nextTick: row["next_tick"], lastTick: row["last_tick"], lastJobID: row["last_job"],
            fired: row["fired"], skipped: row["skipped"])
    }
}
