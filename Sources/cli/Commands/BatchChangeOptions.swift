import ArgumentParser
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// What `tributary update` and `tributary delete` share: the selection, the commit size, the output and the
/// endpoint.
struct BatchChangeOptions: ParsableArguments {
    @OptionGroup var selection: FetchSelectionOptions

    @Option(help: "Most objects one commit changes (1 to 50000); more matches go on in further commits.")
    var perCommit = 50_000

    @Flag(help: "Print how many objects match, and change nothing.")
    var dryRun = false

    @Flag(help: "Print one JSON object: {\"entity\", \"count\", \"commits\", \"ids\"}.")
    var json = false

    @OptionGroup var jobs: JobsEndpointOption

    func validate() throws {
        guard (1...50_000).contains(perCommit) else {
            throw ValidationError("--per-commit must be between 1 and 50000")
        }
    }

    /// Runs `change` with a client, or with --dry-run counts the matches, and prints the outcome.
    func run(verb: String, _ change: (JobClient, Model) async throws -> BatchChangeResult) async throws {
        let entity = selection.entity
        let predicate = try selection.predicate()
        try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) { client in
            if dryRun {
                let count = try await client.count(for: FetchRequest(entity: entity, predicate: predicate))
                Terminal.line(
                    json
                        ? try JSONOutput.dryRun(count: count, entity: entity)
                        : "\(count) \(entity) object(s) match; nothing was \(verb) (--dry-run)")
                return
            }
            let result = try await change(client, try await client.model())
            if json {
                Terminal.line(try JSONOutput.batchChange(result, entity: entity))
            } else {
                let commits = result.commits.count
                let seqs =
                    commits == 0
                    ? ""
                    : commits == 1
                        ? " (seq \(result.commits[0]))" : " (seq \(result.commits[0])–\(result.commits[commits - 1]))"
                Terminal.line("\(verb) \(result.count) \(entity) object(s) in \(commits) commit(s)\(seqs)")
            }
        }
    }
}
