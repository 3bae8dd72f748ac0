import ArgumentParser
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// `tributary fetch`: the objects of an entity that match a predicate, in an order.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Print the objects of an entity that match a predicate, in an order, read from the store.",
        discussion: """
            The objects come from one consistent read of the store. Without --sort they are in id order (ids are \
            time-ordered). --where takes the predicate grammar of docs/contexts.md with literal values ('...' or "..." \
            strings, numbers, TRUE/FALSE, nil, {a, b} lists); a format that does not parse is refused with the \
            parser's message, an unknown entity or key with the coordinator's.

            Text on a terminal, or with --columns or --format table: a table, a column per key path under a header, \
            cut to the terminal's width (else to COLUMNS); NULL shows as an empty cell, a to-many relationship as \
            its count. By default the columns are the attributes, then each to-one relationship by its \
            destination's single unique key (author.login) or else its id, then each to-many relationship's count.

            Into a pipe, or with --format lines: one line per object, `Entity/<id>  version N  attribute=value ... \
            relationship=<id>`, strings quoted.

            --json: one JSON object per line, {"id": "<uuid>", "entity": "...", "version": N, "attributes": {...}, \
            "relationships": {...}, "prefetched": false}, with every attribute and relationship of the entity. \
            Values as an import row gives them: strings, ints and bools as JSON's; doubles as numbers (NaN, \
            Infinity, -Infinity as strings); dates as ISO 8601 in UTC (2024-05-01T12:00:00Z, with a fraction to the \
            microsecond when there is one); data as base64; uuids as lowercase strings; null for NULL. A to-one \
            relationship is its destination's id or null, a to-many one an array of ids.

            --prefetch prints the destinations of a relationship key path after the objects, each once, marked \
            "prefetched": true (text: a leading "prefetched").

            --group-by, --sum, --avg, --min, --max or --having make it an aggregate fetch (Core Data's dictionary \
            results): one row per group of the matching objects, computed by the store in one query, holding the \
            group keys, then the sums, averages, minimums and maximums named function_key (sum_additions), or the \
            count when no function is named. --sort and --having take the row's names (--sort -count); --limit \
            counts rows, all of them by default. A table on a terminal, else `author.login="ada" count=3` lines, or \
            with --json one object per row keyed by the names: {"author.login": "ada", "count": 3}.
            """)

    @OptionGroup var selection: FetchSelectionOptions

    // Unconditional, so a first key that is descending (`--sort -additions`) is taken as the value, not a flag.
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Sort keys, comma-separated, '-' before a key for descending: -additions,number, author.login, reviewers.@count (ties by id).",
            valueName: "keys"))
    var sort: String?

    @Option(help: "At most this many objects (1 to 100000; default 100), or rows of an aggregate fetch (default all).")
    var limit: Int?

    @Option(help: "Skip this many objects first.")
    var offset = 0

    @Option(
        help: ArgumentHelp(
            "A relationship key path whose destinations are printed after the objects: author, reviewers, author.team (repeat for several).",
            valueName: "path"))
    var prefetch: [String] = []

    @OptionGroup var aggregate: AggregateOptions

    @OptionGroup var output: ObjectFormatOptions

    @Flag(help: "Print one JSON object per line instead of text.")
    var json = false

    @OptionGroup var jobs: JobsEndpointOption

    func validate() throws {
        if let limit, !(1...100_000).contains(limit) {
            throw ValidationError("--limit must be between 1 and 100000")
        }
        guard offset >= 0 else { throw ValidationError("--offset must not be negative") }
        if let sort { _ = try FetchSortList.parse(sort) }
        if aggregate.isGiven {
            guard prefetch.isEmpty, output.columns == nil else {
                throw ValidationError(
                    "--prefetch and --columns apply to objects; an aggregate fetch (--group-by, --sum, --avg, --min, "
                        + "--max, --having) prints a column per group key and aggregate")
            }
        } else {
            _ = try output.style(json: json, prefetching: prefetch)
        }
    }

    func run() async throws {
        let sortDescriptors = try sort.map(FetchSortList.parse) ?? []
        if let request = try aggregate.request(
            entity: selection.entity, predicate: try selection.predicate(), counting: false,
            sortedBy: sortDescriptors, limit: limit ?? 0, offset: offset)
        {
            let result = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
                try await $0.aggregate(request)
            }
            for line in try AggregateText.lines(result, json: json, format: output.format) { Terminal.line(line) }
            return
        }
        let style = try output.style(json: json, prefetching: prefetch)
        var request = FetchRequest(
            entity: selection.entity, predicate: try selection.predicate(),
            sortedBy: sortDescriptors, limit: limit ?? 100, offset: offset, prefetching: prefetch)
        let (result, columns) = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            client -> (FetchResult, [ObjectColumn]) in
            guard case .table(let list) = style else { return (try await client.fetch(request), []) }
            let model = try await client.model()
            guard let entity = model.entity(named: request.entity) else {
                throw ValidationError("no entity named '\(request.entity)' in the coordinator's model")
            }
            let columns = try ObjectColumn.columns(list, entity: entity, model: model)
            request.relationshipKeyPathsForPrefetching = Array(Set(columns.flatMap(\.prefetchPaths))).sorted()
            return (try await client.fetch(request), columns)
        }
        switch style {
        case .table:
            let reached = Dictionary(result.prefetched.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            let rows = result.objects.map { object in columns.map { $0.cell(FetchedRow(object, reached: reached)) } }
            for line in ObjectTable.lines(columns: columns, rows: rows, width: Terminal.width) { Terminal.line(line) }
        case .lines, .json:
            for object in result.objects {
                Terminal.line(json ? try JSONOutput.object(object) : ObjectText.line(object))
            }
            for object in result.prefetched {
                Terminal.line(
                    json ? try JSONOutput.object(object, prefetched: true) : ObjectText.line(object, prefetched: true))
            }
        }
    }
}
