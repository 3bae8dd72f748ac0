import ArgumentParser
import Foundation
import Tributary
import TributaryCommandSupport

/// `tributary push`: enqueue jobs.
struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push", abstract: "Enqueue jobs.", subcommands: [PushImportCommand.self])
}

/// `tributary push import`: split an NDJSON file into import jobs.
struct PushImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import an NDJSON file of one entity, split into jobs of --chunk rows.",
        discussion: "With --wait, exits non-zero if any job failed, naming it.")

    @Option(help: "The entity the rows belong to.")
    var entity: String

    @Option(help: ArgumentHelp("The NDJSON file: one JSON object per line.", valueName: "path"))
    var file: String

    @Option(help: "Rows per job.")
    var chunk: Int = 1000

    @Flag(help: "Show progress until every job is done or dead.")
    var wait = false

    @Option(help: "Priority of the jobs: higher runs first.")
    var priority: Int32 = 0

    @Option(help: "Seconds to wait before the jobs may run.")
    var delay: Double = 0

    @OptionGroup var jobs: JobsEndpointOption

    func validate() throws {
        guard chunk > 0 else { throw ValidationError("--chunk must be a positive number of rows") }
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
        let client = try JobClient(endpoint: jobs.endpoint)
        let runAt = delay > 0 ? Date().timeIntervalSince1970 + delay : 0
        let specs = chunks.map { chunk in
            var spec = ImportJob.spec(entity: entity, payload: chunk.payload, rows: chunk.rows)
            spec.priority = priority
            spec.runAt = runAt
            return spec
        }
        let pushed = try await ImportPusher(client: client).push(specs)
        let rows = chunks.reduce(0) { $0 + $1.rows }
        Terminal.error("pushed \(specs.count) jobs (\(rows) rows) as batch \(pushed.batch)")
        guard wait else {
            Terminal.line(pushed.batch)
            await client.close()
            return
        }
        let final = try await client.waitForBatch(pushed.batch) { status in
            Terminal.progress(Terminal.progressBar(done: status.doneRows, total: status.totalRows, unit: "rows"))
        }
        Terminal.endProgress(Terminal.progressBar(done: final.doneRows, total: final.totalRows, unit: "rows"))
        await client.close()
        if final.deadJobs > 0 {
            for job in final.dead {
                let attempts = job.attempts == 1 ? "1 attempt" : "\(job.attempts) attempts"
                Terminal.error("job \(job.jobID) failed (dead after \(attempts)): \(job.message)")
            }
            throw ExitCode(1)
        }
        let cancelled = final.cancelledJobs == 0 ? "" : " (\(final.cancelledJobs) jobs cancelled)"
        Terminal.line("done: \(final.doneJobs) jobs, \(final.doneRows) rows\(cancelled)")
    }
}
