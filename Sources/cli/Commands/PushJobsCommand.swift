import ArgumentParser
import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// `tributary push jobs`: many jobs of any kinds from an NDJSON file of job specs, pushed as one batch in messages of
/// many jobs (as Sidekiq's `push_bulk` and Oban's `insert_all`), where `push job` pushes one per process.
struct PushJobsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobs",
        abstract: "Enqueue many jobs from an NDJSON file of job specs, one per line, as one batch.",
        discussion: """
            Each line is a JSON object under the names of a job spec's JSON (as schedules list --json prints it): \
            "kind" (required), "arguments" (an object of strings), "queue", "priority", "uniqueKey", "afterJobs" \
            (job ids), "afterBatches" (batch names), "afterPushed" (positions from 0 of earlier jobs of the file), \
            "onParentFailure" (fail, cancel or run), "runAt" (seconds since 1970), "maxAttempts", "backoffBaseMs", \
            "backoffCapMs", "timeoutMs", "total" and "payload" (base64). Absent, null, zero and empty values take \
            the defaults; blank lines are skipped. For example:
              {"kind": "mail", "arguments": {"to": "ann@example.com"}, "queue": "mail", "uniqueKey": "welcome-ann"}
              {"kind": "report", "afterPushed": [0], "onParentFailure": "run"}

            The whole file is checked first: a bad line is refused, naming its number and the problem, and nothing \
            is pushed. Prints the job ids in order, one per line, and the batch on standard error (with --json: \
            {"batch", "jobIds", "duplicates"} on one line: the id of a job not enqueued is that of the job holding \
            its unique key, and "duplicates" gives its position). With --wait, shows progress until every job of \
            the batch is done, dead or cancelled, and exits 1 if any died, naming it.
            """)

    @Option(
        help: ArgumentHelp(
            "The NDJSON file of job specs, one per line; - reads standard input.", valueName: "path"))
    var file: String

    @Flag(help: "Wait until every job of the batch is done, dead or cancelled.")
    var wait = false

    @Flag(help: "Print the batch and job ids as one JSON object.")
    var json = false

    @Option(
        help: ArgumentHelp(
            "Jobs per message to the coordinator, each message one write transaction (a parent in an earlier message is named by its id).",
            valueName: "count"))
    var jobsPerMessage = JobPusher.jobsPerMessage

    @OptionGroup var batch: BatchOption

    @OptionGroup var callback: CallbackOptions

    @OptionGroup var jobs: JobsEndpointOption

    @OptionGroup var waiting: WaitOptions

    func validate() throws {
        guard jobsPerMessage > 0 else { throw ValidationError("--jobs-per-message must be a positive number") }
        guard file == "-" || FileManager.default.isReadableFile(atPath: file) else {
            throw ValidationError("cannot read --file \(file): no such readable file")
        }
    }

    func run() async throws {
        let name = file == "-" ? "standard input" : file
        let specs = try JobSpecLines.specs(of: try await lines(), source: name, batch: batch.batch)
        guard !specs.isEmpty else { throw ValidationError("\(name) has no jobs") }
        let client = try JobClient(endpoint: jobs.endpoint, curve: try jobs.curveKeys())
        try await batch.checkOpen(with: client)
        let waiter = wait ? try waiting.subscribe(curve: try jobs.curveKeys()) : nil
        let pushed: PushedBatch
        do {
            pushed = try await JobPusher(client: client, jobsPerMessage: jobsPerMessage).push(
                specs, batch: batch.batch ?? "", onComplete: callback.spec(queue: JobQueue.defaultName))
        } catch let error as JobPusherError {
            // Those pushed are in the store: say which, as a push that succeeded would.
            for id in error.pushed.ids { Terminal.line(String(id)) }
            await waiter?.close()
            await client.close()
            throw error
        } catch {
            await waiter?.close()
            await client.close()
            throw error
        }
        Terminal.error("pushed \(specs.count) jobs as batch \(pushed.batch)")
        try await PushWait.report(
            pushed, json: json, namingBatch: false, waiter: waiter, unit: .jobs, client: client)
    }

    /// The file's lines, or standard input's (read on a thread of its own).
    private func lines() async throws -> [Substring] {
        guard file == "-" else {
            let data = try Data(contentsOf: URL(fileURLWithPath: file))
            guard let text = String(data: data, encoding: .utf8) else {
                throw ValidationError("\(file) is not UTF-8 text")
            }
            return text.split(separator: "\n", omittingEmptySubsequences: false)
        }
        var lines: [Substring] = []
        for await line in StandardInputLines.lines() { lines.append(Substring(line)) }
        return lines
    }
}
