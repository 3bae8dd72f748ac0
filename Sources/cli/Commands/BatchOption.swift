import ArgumentParser
import TributaryClient
import TributaryCore
import TributaryProtocol

/// `--batch NAME`: the batch a push goes into, named by the user (`--after-batch NAME` then waits for it). A new
/// name makes a new batch; an open batch gains the jobs; a finished one (every job done, dead or cancelled) is
/// refused, since its callback has been pushed and the jobs waiting for it settled (docs/jobs.md, "Batches").
struct BatchOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The batch to push into: a new name makes it, an open batch gains the jobs, a finished one is refused (default: a new batch with a generated name).",
            valueName: "name"))
    var batch: String?

    func validate() throws {
        if let batch, batch.isEmpty { throw ValidationError("--batch must not be empty") }
        if let batch, batch.hasPrefix("schedule/") || batch.hasSuffix("/complete") {
            throw ValidationError(
                "--batch '\(batch)': names starting with 'schedule/' or ending in '/complete' are the coordinator's")
        }
    }

    /// Refuses a batch that finished, naming its counts.
    func checkOpen(with client: JobClient) async throws {
        guard let batch else { return }
        let status: BatchStatus
        do {
            status = try await client.batchStatus(batch)
        } catch let error as ProtocolError where error.code == .unknownJob {
            return  // a new name
        }
        guard status.totalJobs > 0, status.isFinished else { return }
        throw ValidationError(
            "batch '\(batch)' has finished (\(status.totalJobs) jobs: \(status.doneJobs) done, \(status.deadJobs) dead, "
                + "\(status.cancelledJobs) cancelled) and takes no new jobs: name a new batch")
    }
}
