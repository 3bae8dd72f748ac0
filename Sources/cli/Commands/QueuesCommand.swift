import ArgumentParser
import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// `tributary queues`: named queues, their depths, and pausing them.
struct QueuesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queues",
        abstract: "List named queues (depth, latency, paused), or pause and resume one.",
        subcommands: [
            QueuesListCommand.self, QueuesActionCommand<PauseQueue>.self, QueuesActionCommand<ResumeQueue>.self,
        ],
        defaultSubcommand: QueuesListCommand.self)

    /// One line per queue.
    static func line(_ queue: CoordinatorStatus.Queue) -> String {
        var parts = [
            queue.name, "\(queue.queued) queued", "latency \(String(format: "%.1f", queue.latencySeconds))s",
        ]
        if queue.paused { parts.append("PAUSED") }
        return parts.joined(separator: "  ")
    }
}

/// `tributary queues list`.
struct QueuesListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the queues that have queued jobs or are paused.")

    @Flag(help: "Print JSON instead of text: name, queued, latencySeconds and paused of each.")
    var json = false

    @OptionGroup var jobs: JobsEndpointOption

    func run() async throws {
        let queues = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.status().queues
        }
        if json {
            Terminal.line(try JobJSON.text(queues))
            return
        }
        if queues.isEmpty { Terminal.line("no queued jobs, no paused queue") }
        for queue in queues { Terminal.line(QueuesCommand.line(queue)) }
    }
}

/// Which of `queues pause|resume` a subcommand is.
protocol QueueActionCommand {
    static var action: QueueAction { get }
    static var abstract: String { get }
}

enum PauseQueue: QueueActionCommand {
    static let action = QueueAction.pause
    static let abstract =
        "Pause a queue: none of its jobs is claimed until it is resumed (pushes, retries and running jobs go on; kept across restarts)."
}

enum ResumeQueue: QueueActionCommand {
    static let action = QueueAction.resume
    static let abstract = "Resume a paused queue: its due jobs are claimed again."
}

/// `tributary queues pause|resume NAME`.
struct QueuesActionCommand<Action: QueueActionCommand>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: Action.action.rawValue, abstract: Action.abstract)
    }

    @Argument(help: "The queue's name: ASCII letters, digits, '_', '-' or '.' (it need not have jobs).")
    var name: String

    @OptionGroup var jobs: JobsEndpointOption

    func validate() throws {
        if let refusal = JobQueue.refusal(of: name) { throw ValidationError(refusal) }
    }

    func run() async throws {
        let queue = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.queue(name, action: Action.action)
        }
        Terminal.line(QueuesCommand.line(queue))
    }
}
