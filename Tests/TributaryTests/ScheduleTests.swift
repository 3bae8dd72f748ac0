import Foundation
import GRDB
import Testing
import TributaryCommandSupport

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Cron expressions: parsing, the next tick, time zones and their clock changes.
@Suite("Cron expressions")
struct CronScheduleTests {
    static func time(_ text: String) -> Double {
        (try? Date(text, strategy: .iso8601))?.timeIntervalSince1970 ?? .nan
    }

    static func text(_ time: Double?) -> String {
        time.map { Date(timeIntervalSince1970: $0).formatted(.iso8601) } ?? "none"
    }

    @Test("next ticks of 5- and 6-field expressions, lists, ranges, steps, names, both day fields, aliases, @every")
    func nextTicks() throws {
        let cases: [(String, String, String, String)] = [
            ("*/5 * * * *", "UTC", "2026-11-24T12:03:10Z", "2026-11-24T12:05:00Z"),
            ("*/5 * * * *", "UTC", "2026-11-24T12:05:00Z", "2026-11-24T12:10:00Z"),
            ("*/2 * * * * *", "UTC", "2026-11-24T12:03:11Z", "2026-11-24T12:03:12Z"),
            ("0 9 * * MON-FRI", "UTC", "2026-11-27T09:00:00Z", "2026-11-30T09:00:00Z"),
            ("0 0 1,15 * *", "UTC", "2026-11-24T00:00:00Z", "2026-12-01T00:00:00Z"),
            ("0 0 13 * 5", "UTC", "2026-11-01T00:00:00Z", "2026-11-06T00:00:00Z"),
            ("15 10-14/2 * JAN *", "UTC", "2026-11-24T00:00:00Z", "2027-01-01T10:15:00Z"),
            ("0 0 * * 7", "UTC", "2026-11-24T00:00:00Z", "2026-11-29T00:00:00Z"),
            ("@hourly", "UTC", "2026-11-24T12:00:00Z", "2026-11-24T13:00:00Z"),
            ("@every 30s", "UTC", "2026-11-24T12:00:10Z", "2026-11-24T12:00:30Z"),
            ("0 9 * * *", "Europe/Paris", "2026-11-24T00:00:00Z", "2026-11-24T08:00:00Z"),
            ("0 9 * * *", "Europe/Paris", "2026-07-01T00:00:00Z", "2026-07-01T07:00:00Z"),
            // Clocks go back in New York on 2026-11-01 at 02:00 EDT: 01:30 comes twice and fires once.
            ("30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"),
            // Clocks go forward on 2026-03-08 at 02:00 EST: 02:30 does not exist that day.
            ("30 2 * * *", "America/New_York", "2026-03-07T08:00:00Z", "2026-03-09T06:30:00Z"),
        ]
        for (expression, zone, after, expected) in cases {
            let cron = try CronSchedule(expression, timeZone: zone)
            #expect(
                Self.text(cron.nextTick(after: Self.time(after))) == Self.text(Self.time(expected)),
                "\(expression) in \(zone) after \(after)")
        }
        #expect(try CronSchedule("0 0 30 2 *").nextTick(after: Self.time("2026-01-01T00:00:00Z")) == nil)
    }

    @Test("a bad expression or zone names what is wrong")
    func errors() {
        for (expression, zone, message) in [
            ("61 * * * *", "UTC", "'61' is not a minute (0-59)"),
            ("* * *", "UTC", "has 3 fields"),
            ("@sometimes", "UTC", "not a known alias"),
            ("*/0 * * * *", "UTC", "the step of a minute must be from 1 to 60"),
            ("5-1 * * * *", "UTC", "runs backwards"),
            ("* * * * *", "Mars/Olympus", "unknown time zone 'Mars/Olympus'"),
            ("@every 0s", "UTC", "@every takes a duration"),
        ] {
            #expect(throws: CronError.self, "\(expression)") { try CronSchedule(expression, timeZone: zone) }
            do {
                _ = try CronSchedule(expression, timeZone: zone)
            } catch {
                #expect("\(error)".contains(message), "\(error)")
            }
        }
    }
}

/// Schedules in the store: missed-tick policies applied to ticks that fell due while no coordinator ran.
@Suite("Schedules: the store")
struct ScheduleStoreTests {
    let temporary: TemporaryStore
    var store: RootStore { temporary.store }

    init() throws {
        temporary = try TemporaryStore(modelJSON: DemoData.modelJSON)
    }

    func ticks(of schedule: String) async throws -> [Double] {
        try await store.pool.read { db in
            try Double.fetchAll(
                db, sql: "SELECT tick FROM tributary_jobs WHERE schedule = ? ORDER BY tick", arguments: [schedule])
        }
    }

    @Test("ten ticks missed: `all` enqueues ten, `once` the latest, `skip` none; each tick once however often it fires")
    func missedTicks() async throws {
        for policy in MissedTicks.allCases {
            _ = try await store.jobs.putSchedule(
                ScheduleSpec(name: policy.rawValue, cron: "@every 1s", missed: policy, job: JobSpec(kind: "noop")),
                replace: false)
        }
        // Put at once, they may straddle a second: each starts at the same tick.
        let first = try #require(try await store.jobs.schedules().map(\.nextTick).max())
        try await store.pool.write {
            try $0.execute(sql: "UPDATE tributary_schedules SET next_tick = ?", arguments: [first])
        }
        let fired = try await store.jobs.fireDueSchedules(now: first + 9.5, catchingUp: true)
        #expect(fired.jobs.count == 11 && fired.skipped == 10 + 9)
        #expect(try await ticks(of: "all") == (0..<10).map { first + Double($0) })
        #expect(try await ticks(of: "once") == [first + 9])
        #expect(try await ticks(of: "skip") == [])
        // Running on, ticks that came due together fire as one job, the latest (`all`: each).
        _ = try await store.jobs.fireDueSchedules(now: first + 12.5, catchingUp: false)
        #expect(try await ticks(of: "all").count == 13)
        #expect(try await ticks(of: "once") == [first + 9, first + 12])
        #expect(try await ticks(of: "skip") == [first + 12])
        // The same ticks again (a clock stepped back, say): nothing more.
        _ = try await store.jobs.fireDueSchedules(now: first + 12.5, catchingUp: true)
        #expect(try await ticks(of: "all").count == 13)
        let all = try #require(try await store.jobs.schedules().first { $0.spec.name == "all" })
        #expect(all.fired == 13 && all.lastTick == first + 12 && all.nextTick == first + 13)
        let lastJob = try #require(all.lastJobID)
        let job = try #require(try await store.jobs.job(id: lastJob))
        #expect(job.batch == "schedule/all" && job.schedule == "all" && job.tick == first + 12)
        #expect(job.arguments == ["schedule": "all", "tick": JobStore.tickText(first + 12)])
    }

    @Test("pause fires nothing; resume starts at the next tick after now; replace keeps counts; a bad one is refused")
    func pauseResumeReplace() async throws {
        let spec = ScheduleSpec(name: "s", cron: "@every 1s", missed: .all, job: JobSpec(kind: "noop"))
        let added = try await store.jobs.putSchedule(spec, replace: false)
        _ = try await store.jobs.setSchedule("s", paused: true)
        let fired = try await store.jobs.fireDueSchedules(now: added.nextTick + 5, catchingUp: false)
        #expect(fired.jobs.isEmpty && fired.next == nil)
        // The next tick after the moment of the resume: between the clock read before the call and one
        // second after the clock read once it returned, however long the call took on a loaded machine.
        let beforeResume = Date().timeIntervalSince1970
        let resumed = try #require(try await store.jobs.setSchedule("s", paused: false))
        let afterResume = Date().timeIntervalSince1970
        #expect(!resumed.paused && resumed.nextTick > beforeResume && resumed.nextTick <= afterResume + 1)
        await #expect(throws: StoreError.self) { try await store.jobs.putSchedule(spec, replace: false) }
        var changed = spec
        changed.cron = "0 * * * *"
        let replaced = try await store.jobs.putSchedule(changed, replace: true)
        #expect(replaced.spec.cron == "0 * * * *" && !replaced.paused)
        #expect(try await store.jobs.deleteSchedule("s")?.spec.name == "s")
        #expect(try await store.jobs.schedules().isEmpty)
    }
}

/// Schedules with a real coordinator: every tick of a schedule firing each second fires exactly once across a
/// SIGKILL and a restart, and the missed-tick policies hold across a stop of several ticks.
@Suite("Schedules: real coordinator", .serialized)
struct ScheduleIntegrationTests {
    /// Each schedule's ticks that have a job, with how many jobs each tick has.
    static func ticks(_ storePath: String) throws -> [String: [(tick: Double, jobs: Int)]] {
        try DatabaseQueue(path: storePath).read { db in
            var ticks: [String: [(tick: Double, jobs: Int)]] = [:]
            for row in try Row.fetchAll(
                db,
                sql:
                    "SELECT schedule, tick, COUNT(*) AS n FROM tributary_jobs WHERE schedule IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2"
            ) {
                ticks[row["schedule"], default: []].append((row["tick"], row["n"]))
            }
            return ticks
        }
    }

    static func restart(_ directory: TemporaryDirectory) async throws -> TestCoordinator {
        try await TestCoordinator.start(in: directory, workers: 1)
    }

    @Test(
        "every-second schedules across a SIGKILL and a stop of several ticks: `all` has every tick once, `once` one of the missed, `skip` none"
    )
    func acrossRestarts() async throws {
        let directory = try TemporaryDirectory()
        var coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        let running = Locked(coordinator.process)
        defer { Task { await running.value.stop() } }
        for policy in MissedTicks.allCases {
            let added = try await Binaries.run(
                "tributary",
                [
                    "schedules", "add", policy.rawValue, "--cron", "* * * * * *", "--kind", "noop", "--missed",
                    policy.rawValue, "--argument", "from=test", "--listen", coordinator.process.listenEndpoint,
                ])
            #expect(added.status == 0, "\(added.error)")
            #expect(added.output.contains("\(policy.rawValue)  \"* * * * * *\"  UTC  kind noop"), "\(added.output)")
        }
        func fired(_ schedule: String) throws -> Int { try Self.ticks(coordinator.storePath)[schedule]?.count ?? 0 }
        try await waitUntil("each schedule to fire twice") { try MissedTicks.names.allSatisfy { try fired($0) >= 2 } }

        // SIGKILL, then a restart at once.
        kill(coordinator.process.pid, SIGKILL)
        _ = await coordinator.process.stop()
        coordinator = try await Self.restart(directory)
        running.withLock { $0 = coordinator.process }
        try await waitUntil("each schedule to fire twice more") {
            try MissedTicks.names.allSatisfy { try fired($0) >= 4 }
        }

        // A graceful stop across several ticks.
        #expect(await coordinator.process.stop() == 0)
        let stopped = try Self.ticks(coordinator.storePath)
        let stoppedAt = Date().timeIntervalSince1970
        // Time itself is what the test needs to pass here: ticks fall due while no coordinator runs.
        try await Task.sleep(for: .seconds(3.5))
        let restartedAt = Date().timeIntervalSince1970
        coordinator = try await Self.restart(directory)
        running.withLock { $0 = coordinator.process }
        try await waitUntil("each schedule to fire after the restart") {
            let ticks = try Self.ticks(coordinator.storePath)
            return MissedTicks.names.allSatisfy { (ticks[$0]?.last?.tick ?? 0) > restartedAt + 1 }
        }
        let ticks = try Self.ticks(coordinator.storePath)
        for (name, list) in ticks {
            #expect(list.allSatisfy { $0.jobs == 1 }, "\(name): a tick with more than one job")
        }
        // `all`: every tick from the first to the last, once: across the SIGKILL and the stop.
        let all = try #require(ticks["all"])
        #expect(all.count == Int(all.last!.tick - all.first!.tick) + 1, "`all` missed ticks: \(all.map(\.tick))")
        // `once`: of the ticks missed while stopped (3.5 s and more), one job at most, for the latest: the first
        // job after the stop is 3 ticks or more after the last before it, and at most one job has a tick from before
        // the restart.
        let lastBefore = try #require(stopped["once"]?.last?.tick)
        let once = try #require(ticks["once"]).map(\.tick).filter { $0 > lastBefore }
        #expect(once.first.map { $0 - lastBefore >= 3 } == true, "once: \(once), stopped \(stoppedAt)")
        #expect(once.filter { $0 <= restartedAt }.count <= 1, "once: \(once), restarted at \(restartedAt)")
        // `skip`: none of the ticks missed while stopped.
        let lastSkipBefore = try #require(stopped["skip"]?.last?.tick)
        let skip = try #require(ticks["skip"]).map(\.tick).filter { $0 > lastSkipBefore }
        #expect(skip.first.map { $0 > restartedAt } == true, "skip: \(skip), restarted at \(restartedAt)")
        // The jobs ran (a pool worker serves noop), each with its tick.
        try await waitUntil("the scheduled jobs to be done") {
            try DatabaseQueue(path: coordinator.storePath).read { db in
                try Int.fetchOne(
                    db,
                    sql: "SELECT COUNT(*) FROM tributary_jobs WHERE schedule = 'all' AND tick <= ? AND state <> 'done'",
                    arguments: [all.last!.tick]) == 0
            }
        }
        let list = try await Binaries.run(
            "tributary", ["schedules", "list", "--listen", coordinator.process.listenEndpoint])
        #expect(list.output.contains("skip  \"* * * * * *\"  UTC") && list.output.contains("skipped"), "\(list.output)")
        for action in ["pause", "resume", "delete"] {
            let done = try await Binaries.run(
                "tributary", ["schedules", action, "once", "--listen", coordinator.process.listenEndpoint])
            #expect(done.status == 0, "\(action): \(done.error)")
        }
        let missing = try await Binaries.run(
            "tributary", ["schedules", "pause", "nope", "--listen", coordinator.process.listenEndpoint])
        #expect(missing.status != 0 && missing.error.contains("schedule 'nope' does not exist"), "\(missing.error)")
        let bad = try await Binaries.run(
            "tributary",
            [
                "schedules", "add", "x", "--cron", "* * *", "--kind", "noop", "--listen",
                coordinator.process.listenEndpoint,
            ])
        #expect(bad.status != 0 && bad.error.contains("has 3 fields"), "\(bad.error)")
        let importing = try await Binaries.run(
            "tributary",
            [
                "schedules", "add", "x", "--cron", "@hourly", "--kind", "import", "--listen",
                coordinator.process.listenEndpoint,
            ])
        #expect(importing.status != 0 && importing.error.contains("cannot enqueue import jobs"), "\(importing.error)")
    }
}
