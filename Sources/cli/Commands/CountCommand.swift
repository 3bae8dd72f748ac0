import ArgumentParser
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// `tributary count`: how many objects of an entity match a predicate.
struct CountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "count",
        abstract: "Print how many objects of an entity match a predicate (every object without --where), or per group.",
        discussion: """
            --where takes the predicate grammar of docs/contexts.md, as `tributary fetch` does; the count comes \
            from one consistent read of the store.

            --group-by KEYS counts per group: a row per group with its keys and its count, then any --sum, --avg, \
            --min and --max asked for; --having keeps the groups it holds for (--having 'count > 2'). The rows are \
            printed as `tributary fetch` prints an aggregate fetch's (a table on a terminal, lines into a pipe, \
            --json an object per row), in the order of their group keys.
            """)

    @OptionGroup var selection: FetchSelectionOptions

    @OptionGroup var aggregate: AggregateOptions

    @Option(
        help: ArgumentHelp(
            "How groups are printed as text: table or lines (a terminal's default is table).", valueName: "table|lines")
    )
    var format: ObjectFormatOptions.Format?

    @Flag(help: "Print groups as one JSON object per line; without --group-by, {\"count\": N}.")
    var json = false

    @OptionGroup var jobs: JobsEndpointOption

    func validate() throws {
        guard aggregate.isGiven || format == nil else {
            throw ValidationError("--format prints groups; give --group-by (or --sum, --avg, --min, --max, --having)")
        }
    }

    func run() async throws {
        if let request = try aggregate.request(
            entity: selection.entity, predicate: try selection.predicate(), counting: true)
        {
            let result = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
                try await $0.aggregate(request)
            }
            for line in try AggregateText.lines(result, json: json, format: format) { Terminal.line(line) }
            return
        }
        let request = FetchRequest(entity: selection.entity, predicate: try selection.predicate())
        let count = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.count(for: request)
        }
        Terminal.line(json ? "{\"count\":\(count)}" : String(count))
    }
}
