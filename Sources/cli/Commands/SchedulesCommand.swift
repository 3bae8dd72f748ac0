import ArgumentParser
import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// `tributary schedules`: periodic jobs kept in the store.
struct SchedulesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedules",
        abstract: "Add, list, pause, resume or delete periodic jobs (one job per cron tick, kept in the store).",
        subcommands: [
            SchedulesAddCommand.self, SchedulesListCommand.self, SchedulesActionCommand<Pause>.self,
            SchedulesActionCommand<Resume>.self, SchedulesActionCommand<Delete>.self,
        ],
        defaultSubcommand: SchedulesListCommand.self)

    /// One line per schedule.
    static func line(_ info: ScheduleInfo) -> String {
        let spec = info.spec
        var parts = [
            spec.name, "\"\(spec.cron)\"", spec.timeZone, "kind \(spec.job.kind)", "queue \(spec.job.queue)",
            "missed \(spec.missed.rawValue)",
        ]
        if info.paused {
            parts.append("paused")
        } else if info.nextTick > 0 {
            parts.append("next \(Date(timeIntervalSince1970: info.nextTick).formatted(.iso8601))")
        } else {
            parts.append("no more ticks")
        }
        parts.append("fired \(info.fired)")
        if info.skipped > 0 { parts.append("skipped \(info.skipped)") }
        if let lastJobID = info.lastJobID { parts.append("last job \(lastJobID)") }
        return parts.joined(separator: "  ")
    }
}

/// `tributary schedules add NAME --cron EXPR --kind KIND …`.
struct SchedulesAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a schedule: at each tick of --cron, one job of --kind is enqueued.",
        discussion: """
            --cron takes 5 fields (minute hour day-of-month month day-of-week), 6 (seconds first), or @hourly, \
            @daily, @weekly, @monthly, @yearly, @every DURATION (e.g. @every 30s). Each job's arguments gain \
            "schedule" and "tick" (the tick's time, seconds since 1970). Ticks that fell due while no coordinator \
            ran follow --missed: once (one job, for the latest), all (one per tick, at most 1000) or skip.
            """)

    @Argument(help: "The schedule's name: letters, digits, '-', '_' or '.'.")
    var name: String

    @Option(help: ArgumentHelp("When it fires: a cron expression.", valueName: "expression"))
    var cron: String

    @Option(help: "The kind of job each tick enqueues.")
    var kind: String

    @Option(
        name: .customLong("argument"),
        help: ArgumentHelp("An argument of each job, key=value (repeatable).", valueName: "key=value"))
    var arguments: [String] = []

    @Option(help: ArgumentHelp("The IANA time zone the expression is read in.", valueName: "zone"))
    var timezone = "UTC"

    @Option(help: ArgumentHelp("Ticks missed while no coordinator ran: once, all or skip.", valueName: "policy"))
    var missed = MissedTicks.once.rawValue

    @Option(help: "The named queue the jobs wait in.")
    var queue: String = JobQueue.defaultName

    @Option(help: "Priority of the jobs: higher runs first.")
    var priority: Int32 = 0

    @Flag(help: "Replace a schedule of the same name (keeping its counts and whether it is paused).")
    var replace = false

    @OptionGroup var jobs: JobsEndpointOption

    func validate() throws {
        if let refusal = ScheduleSpec.refusal(ofName: name) { throw ValidationError(refusal) }
        guard !kind.isEmpty else { throw ValidationError("--kind must name a job kind") }
        guard MissedTicks(rawValue: missed) != nil else {
            throw ValidationError("--missed must be one of \(MissedTicks.names.joined(separator: ", "))")
        }
        if let refusal = JobQueue.refusal(of: queue) { throw ValidationError("--queue: \(refusal)") }
        for argument in arguments where !argument.contains("=") || argument.hasPrefix("=") {
            throw ValidationError("--argument '\(argument)' is not key=value")
        }
        do {
            _ = try CronSchedule(cron, timeZone: timezone)
        } catch let error as CronError {
            throw ValidationError("--cron/--timezone: \(error.description)")
        }
    }

    func run() async throws {
        var job = JobSpec(kind: kind, priority: priority, queue: queue)
        for argument in arguments {
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            job.arguments[String(parts[0])] = String(parts[1])
        }
        // `missed` is one of the policies once validate() passed.
        let spec = ScheduleSpec(
            name: name, cron: cron, timeZone: timezone, missed: MissedTicks(rawValue: missed) ?? .once, job: job)
        let info = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.putSchedule(spec, replace: replace)
        }
        Terminal.line(SchedulesCommand.line(info))
    }
}

/// `tributary schedules list`.
struct SchedulesListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List schedules: expression, zone, next tick, jobs fired.")

    @Flag(help: "Print JSON instead of text: every field of each schedule, its job spec included.")
    var json = false

    @OptionGroup var jobs: JobsEndpointOption

    func run() async throws {
        let schedules = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.schedules()
        }
        if json {
            Terminal.line(try JobJSON.text(schedules))
            return
        }
        if schedules.isEmpty { Terminal.line("no schedules") }
        for schedule in schedules { Terminal.line(SchedulesCommand.line(schedule)) }
    }
}

/// Which of `schedules pause|resume|delete` a subcommand is.
protocol ScheduleActionCommand {
    static var action: ScheduleAction { get }
    static var abstract: String { get }
}

enum Pause: ScheduleActionCommand {
    static let action = ScheduleAction.pause
    static let abstract = "Pause a schedule: its ticks enqueue nothing until it resumes."
}

enum Resume: ScheduleActionCommand {
    static let action = ScheduleAction.resume
    static let abstract = "Resume a paused schedule at its next tick (the ticks it passed while paused do not fire)."
}

enum Delete: ScheduleActionCommand {
    static let action = ScheduleAction.delete
    static let abstract = "Delete a schedule (the jobs it enqueued stay)."
}

/// `tributary schedules pause|resume|delete NAME`.
struct SchedulesActionCommand<Action: ScheduleActionCommand>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: Action.action.rawValue, abstract: Action.abstract)
    }

    @Argument(help: "The schedule's name.")
    var name: String

    @OptionGroup var jobs: JobsEndpointOption

    func run() async throws {
        let info = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.schedule(name, action: Action.action)
        }
        Terminal.line((Action.action == .delete ? "deleted " : "") + SchedulesCommand.line(info))
    }
}
