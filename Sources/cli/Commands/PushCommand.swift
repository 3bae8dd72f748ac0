import ArgumentParser
import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// `tributary push`: enqueue jobs.
struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push", abstract: "Enqueue jobs.",
        subcommands: [PushImportCommand.self, PushJobCommand.self, PushJobsCommand.self])
}

/// `tributary push job`: one job of any kind, for workers with handlers of their own.
struct PushJobCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "job",
        abstract: "Enqueue one job of a kind a worker registered (e.g. the sample triage-worker's 'triage').",
        discussion: """
            Prints the job id. With --wait, waits until it is done (learning of its end on the coordinator's feed, \
            --feed), and exits 1 if it died, naming why.
            """)

    @Option(help: "The job kind, as the worker's handler names it.")
    var kind: String

    @Option(
        name: .customLong("argument"),
        help: ArgumentHelp("An argument of the job, key=value (repeatable).", valueName: "key=value"))
    var arguments: [String] = []

    @Option(help: ArgumentHelp("A file whose bytes are the job's payload.", valueName: "path"))
    var payload: String?

    @Flag(help: "Wait until the job is done or dead.")
    var wait = false

    @Option(help: "Priority of the job: higher runs first.")
    var priority: Int32 = 0

    @Option(help: "The named queue the job waits in (workers serve the queues they were started with).")
    var queue: String = JobQueue.defaultName

    @Option(
        help: ArgumentHelp(
            "Enqueue nothing while a job with this key is waiting, queued or running (prints that job's id instead).",
            valueName: "key"))
    var uniqueKey: String?

    @OptionGroup var batch: BatchOption

    @OptionGroup var callback: CallbackOptions

    @OptionGroup var parents: ParentOptions

    @OptionGroup var jobs: JobsEndpointOption

    @OptionGroup var waiting: WaitOptions

    func validate() throws {
        guard !kind.isEmpty else { throw ValidationError("--kind must name a job kind") }
        if let refusal = JobQueue.refusal(of: queue) { throw ValidationError("--queue: \(refusal)") }
        if let uniqueKey, uniqueKey.isEmpty { throw ValidationError("--unique-key must not be empty") }
        for argument in arguments where !argument.contains("=") || argument.hasPrefix("=") {
            throw ValidationError("--argument '\(argument)' is not key=value")
        }
        if let payload, !FileManager.default.isReadableFile(atPath: payload) {
            throw ValidationError("cannot read --payload \(payload): no such readable file")
        }
    }

    func run() async throws {
        var spec = JobSpec(kind: kind, priority: priority, uniqueKey: uniqueKey, queue: queue)
        for argument in arguments {
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            spec.arguments[String(parts[0])] = String(parts[1])
        }
        if let payload { spec.payload = try Data(contentsOf: URL(fileURLWithPath: payload)) }
        parents.apply(to: &spec)
        let client = try JobClient(endpoint: jobs.endpoint, curve: try jobs.curveKeys())
        try await batch.checkOpen(with: client)
        let waiter = wait ? try waiting.subscribe(curve: try jobs.curveKeys()) : nil
        let pushed: PushedBatch
        do {
            pushed = try await client.push([spec], batch: batch.batch ?? "", onComplete: callback.spec(queue: queue))
        } catch {
            await waiter?.close()
            throw error
        }
        let id = pushed.ids.first ?? 0
        if !pushed.duplicates.isEmpty {
            Terminal.error("not enqueued: job \(id) has the unique key '\(uniqueKey ?? "")'")
        }
        guard let waiter else {
            Terminal.line(String(id))
            await client.close()
            return
        }
        // A duplicate's batch is empty: wait for the job that holds the key instead.
        do {
            try await waiter.job(id, client: client)
        } catch {
            await client.close()
            throw error
        }
        await client.close()
    }
}

/// `tributary push import`: split an NDJSON file into import jobs.
struct PushImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import an NDJSON file of one entity, split into jobs of --chunk rows.",
        discussion: """
            Prints the batch, then the job ids in order, one per line (with --json: {"batch", "jobIds", \
            "duplicates"} on one line: the ids of jobs not enqueued are those of the jobs that hold their unique \
            keys, and "duplicates" gives their positions). With --wait, shows progress until every job is done or \
            dead (learning of their ends on the coordinator's feed, --feed), and exits non-zero if any job failed, \
            naming it.
            """)

    @Option(help: "The entity the rows belong to.")
    var entity: String

    @Option(help: ArgumentHelp("The NDJSON file: one JSON object per line.", valueName: "path"))
    var file: String

    @Option(help: "Rows per job.")
    var chunk: Int = 1000

    @Option(
        help: ArgumentHelp(
            "Rows per save within a job (its batch_size; default: the worker's, 1,000). Bigger saves make bigger commits: faster imports, more coordinator memory (docs/benchmarks.md).",
            valueName: "rows"))
    var batchSize: Int?

    @Flag(help: "Show progress until every job is done or dead.")
    var wait = false

    @Flag(help: "Print the batch and job ids as one JSON object.")
    var json = false

    @Option(help: "Priority of the jobs: higher runs first.")
    var priority: Int32 = 0

    @Option(help: "The named queue the jobs wait in (workers serve the queues they were started with).")
    var queue: String = JobQueue.defaultName

    @Option(help: "Seconds to wait before the jobs may run.")
    var delay: Double = 0

    @Option(
        help: ArgumentHelp(
            "Give job N of this push the unique key KEY#N: pushing the same file again while its jobs are waiting, queued or running enqueues nothing twice.",
            valueName: "key"))
    var uniqueKey: String?

    @OptionGroup var batch: BatchOption

    @OptionGroup var callback: CallbackOptions

    @OptionGroup var parents: ParentOptions

    @OptionGroup var jobs: JobsEndpointOption

    @OptionGroup var waiting: WaitOptions

    func validate() throws {
        guard chunk > 0 else { throw ValidationError("--chunk must be a positive number of rows") }
        if let batchSize, batchSize <= 0 {
            throw ValidationError("--batch-size must be a positive number of rows")
        }
        if let refusal = JobQueue.refusal(of: queue) { throw ValidationError("--queue: \(refusal)") }
        if let uniqueKey, uniqueKey.isEmpty { throw ValidationError("--unique-key must not be empty") }
        guard delay >= 0 && delay.isFinite else {
            throw ValidationError("--delay must be a number of seconds, 0 or more")
        }
        guard FileManager.default.isReadableFile(atPath: file) else {
            throw ValidationError("cannot read --file \(file): no such readable file")
        }
    }

    func run() async throws {
        let chunks = try NDJSONChunker.chunks(of: URL(fileURLWithPath: file), rowsPerJob: chunk)
        guard !chunks.isEmpty else { throw ValidationError("\(file) has no rows") }
        let client = try JobClient(endpoint: jobs.endpoint, curve: try jobs.curveKeys())
        let runAt = delay > 0 ? Date(timeIntervalSinceNow: delay) : nil
        let specs = chunks.enumerated().map { index, chunk in
            var spec = ImportJob.spec(entity: entity, payload: chunk.payload, rows: chunk.rows, batchSize: batchSize)
            spec.priority = priority
            spec.runAt = runAt
            spec.queue = queue
            if let uniqueKey { spec.uniqueKey = "\(uniqueKey)#\(index + 1)" }
            parents.apply(to: &spec)
            return spec
        }
        try await batch.checkOpen(with: client)
        let waiter = wait ? try waiting.subscribe(curve: try jobs.curveKeys()) : nil
        let pushed: PushedBatch
        do {
            pushed = try await JobPusher(client: client).push(
                specs, batch: batch.batch ?? "", onComplete: callback.spec(queue: queue))
        } catch {
            await waiter?.close()
            throw error
        }
        let rows = chunks.reduce(0) { $0 + $1.rows }
        Terminal.error("pushed \(specs.count) jobs (\(rows) rows) as batch \(pushed.batch)")
        try await PushWait.report(
            pushed, json: json, namingBatch: true, waiter: waiter, unit: .rows, client: client)
    }
}
