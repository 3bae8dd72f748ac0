import Foundation

/// What a schedule does with ticks that fell due while no coordinator ran.
public enum MissedTicks: String, Sendable, CaseIterable {
    /// One job, for the latest of them (the default).
    case once
    /// A job for each of them, at most ``ScheduleSpec/maxCatchUp``.
    case all
    /// None: the schedule resumes at its next tick.
    case skip

    /// Every policy's name, for messages that list them.
    public static let names = allCases.map(\.rawValue)
}

/// A periodic job kept in the store (`tributary schedules add`): at each tick of `cron` in `timeZone` the coordinator
/// enqueues one job of `job`, unique by (schedule, tick), in the batch `schedule/NAME`.
public struct ScheduleSpec: Sendable, Equatable {
    /// Most jobs a schedule of ``MissedTicks/all`` enqueues for the ticks it missed.
    public static let maxCatchUp = 1_000

    /// The schedule's name, unique in the store (``refusal(ofName:)`` says which names are allowed).
    public var name: String
    /// A cron expression (``CronSchedule``).
    public var cron: String
    /// An IANA time zone name.
    public var timeZone: String
    /// What the coordinator does with ticks that fell due while it did not run.
    public var missed: MissedTicks
    /// What each tick enqueues; its arguments gain `schedule` and `tick`.
    public var job: JobSpec

    /// A schedule `name` that enqueues `job` at each tick of `cron` read in `timeZone` (an empty one is UTC).
    public init(name: String, cron: String, timeZone: String = "UTC", missed: MissedTicks = .once, job: JobSpec) {
        self.name = name
        self.cron = cron
        self.timeZone = timeZone.isEmpty ? "UTC" : timeZone
        self.missed = missed
        self.job = job
    }

    /// The schedule's ticks.
    /// - Throws: ``CronError`` naming what is wrong with its cron expression or time zone.
    public func cronSchedule() throws -> CronSchedule {
        try CronSchedule(cron, timeZone: timeZone)
    }

    /// Why `name` cannot name a schedule, or nil when it can: 1 to 64 letters, digits, `-`, `_` or `.`.
    public static func refusal(ofName name: String) -> String? {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        guard !name.isEmpty, name.count <= 64, name.allSatisfy(allowed.contains) else {
            return "'\(name)' is not a schedule name: 1 to 64 letters, digits, '-', '_' or '.'"
        }
        return nil
    }
}

/// A schedule as the store keeps it: its spec and where it stands.
public struct ScheduleInfo: Sendable, Equatable {
    /// The schedule as added.
    public var spec: ScheduleSpec
    /// Whether it is paused: its ticks enqueue nothing (``ScheduleAction/pause``).
    public var paused: Bool
    /// The next tick it fires at, in seconds since 1970 (0 when its expression has no more ticks).
    public var nextTick: Double
    /// Its latest tick that enqueued a job; nil before the first.
    public var lastTick: Double?
    /// The job its latest tick enqueued; nil before the first.
    public var lastJobID: Int64?
    /// Jobs enqueued.
    public var fired: Int64
    /// Ticks passed over (missed or paused).
    public var skipped: Int64

    /// A schedule and where it stands.
    public init(
        spec: ScheduleSpec, paused: Bool, nextTick: Double, lastTick: Double?, lastJobID: Int64?, fired: Int64,
        skipped: Int64
    ) {
        self.spec = spec
        self.paused = paused
        self.nextTick = nextTick
        self.lastTick = lastTick
        self.lastJobID = lastJobID
        self.fired = fired
        self.skipped = skipped
    }
}
