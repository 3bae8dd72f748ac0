import ArgumentParser
import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// `tributary jobs`: look at jobs and put dead ones back.
struct JobsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobs",
        abstract: "List jobs, show one with its error history, retry a dead one, cancel or delete one.",
        subcommands: [
            JobsListCommand.self, JobsShowCommand.self, JobsRetryCommand.self, JobsCancelCommand.self,
            JobsDeleteCommand.self,
        ])
}

/// `tributary jobs list`.
struct JobsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List jobs, newest first.")

    @Option(help: "Only jobs in this state: waiting, queued, running, done, dead or cancelled.")
    var state: String?

    @Option(help: "Only jobs of this batch.")
    var batch: String?

    @Option(help: "At most this many jobs (up to 1000).")
    var limit = 50

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @OptionGroup var jobs: JobsEndpointOption

    func validate() throws {
        if let state, JobState(rawValue: state) == nil {
            throw ValidationError("--state must be one of \(JobState.names.joined(separator: ", "))")
        }
        guard (1...1_000).contains(limit) else { throw ValidationError("--limit must be between 1 and 1000") }
    }

    func run() async throws {
        let list = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.jobs(state: state.flatMap(JobState.init(rawValue:)), batch: batch, limit: limit)
        }
        if json {
            Terminal.line(try JSONOutput.jobs(list))
            return
        }
        for job in list { Terminal.line(JobText.summary(job)) }
    }
}

/// `tributary jobs show ID`.
struct JobsShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show a job: its state, attempts, progress and error history.")

    @Argument(help: "The job id.")
    var id: UInt64

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @OptionGroup var jobs: JobsEndpointOption

    func run() async throws {
        let job = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.job(Int64(clamping: id))
        }
        Terminal.line(json ? try JSONOutput.job(job) : JobText.details(job))
    }
}

/// `tributary jobs retry ID`.
struct JobsRetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry", abstract: "Put a dead job back in the queue with all its attempts again.")

    @Argument(help: "The job id.")
    var id: UInt64

    @OptionGroup var jobs: JobsEndpointOption

    func run() async throws {
        let job = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.retry(Int64(clamping: id))
        }
        Terminal.line(JobText.summary(job))
    }
}

/// `tributary jobs cancel ID`.
struct JobsCancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract:
            "Cancel a waiting, queued or running job; a running one stops at its next batch, keeping what it committed."
    )

    @Argument(help: "The job id.")
    var id: UInt64

    @OptionGroup var jobs: JobsEndpointOption

    func run() async throws {
        let job = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.cancel(Int64(clamping: id))
        }
        Terminal.line(JobText.summary(job))
    }
}

/// `tributary jobs delete ID`.
struct JobsDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a finished (done, dead or cancelled) job and its payload.")

    @Argument(help: "The job id.")
    var id: UInt64

    @OptionGroup var jobs: JobsEndpointOption

    func run() async throws {
        let job = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.delete(Int64(clamping: id))
        }
        Terminal.line("deleted: " + JobText.summary(job))
    }
}
