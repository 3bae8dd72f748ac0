import ArgumentParser
import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore
import TributaryMessaging

/// `tributary watch`: a live result in the shell.
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract:
            "Show the objects of an entity that match a predicate, in an order, kept current as commits change them.",
        discussion: """
            A view context that holds only what it fetched follows the feed and keeps the result current, fetching \
            again only for a change it cannot judge from the commit's values (docs/contexts.md#live-results). \
            --where and --sort take the grammar of `tributary fetch`.

            Text: under a header with the commit, the rows as `tributary fetch` prints them: a table on a terminal \
            or with --columns or --format table (its columns as fetch's, cut to the terminal's width), a line per \
            object into a pipe or with --format lines; with --section, a line per section before its rows (its \
            value and row count). On a terminal the table is redrawn in place, otherwise each state follows the \
            last. The objects a column's key path reaches are fetched with the rows and kept current.

            --json: one line per state, its difference from the line before: {"seq", "count", "removed": \
            [{"offset", "id"}], "inserted": [{"offset", "id"}], "moved": [{"from", "to", "id"}], "updated": \
            [offsets], "refetched"}, and with --section "sections": [{"name", "count"}] (the rows in order, \
            grouped; a NULL value's name is ""). The first line inserts every row. Removals are at the previous state's \
            offsets and insertions at the new one's (a moved row appears in both), so replaying them gives each \
            state.

            --group-by, --sum, --avg, --min, --max or --having make it a live aggregate: the groups of the \
            matching objects, as `tributary fetch --group-by` prints them, kept current as each commit moves \
            objects between groups (counts and sums move by the change, a minimum or maximum that left its group is \
            recomputed from the values the view holds; at most 99,999 objects may match). --sort and --having take \
            the row's names; --limit counts rows, all of them by default. --json: one line per state, {"seq", \
            "count", "removed": [{"offset"}], "inserted": [{"offset", "row"}], "moved": [{"from", "to"}], \
            "updated": [{"offset", "row"}], "refetched"}, each row an object keyed by the row's names; removals and \
            moves out at the previous state's offsets (highest first), then insertions and moves in at the new \
            one's (lowest first), then the updated rows' values, give each state.

            Runs until SIGINT or SIGTERM.
            """)

    @OptionGroup var selection: FetchSelectionOptions

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Sort keys, comma-separated, '-' before a key for descending (ties by id).", valueName: "keys"))
    var sort: String?

    @Option(help: "At most this many rows (1 to 10000; default 20 objects, or every group of a live aggregate).")
    var limit: Int?

    @Option(
        help: ArgumentHelp(
            "Group the rows by this key or to-one key path (sorted by it first, ascending, unless --sort starts with it).",
            valueName: "key"))
    var section: String?

    @OptionGroup var aggregate: AggregateOptions

    @OptionGroup var output: ObjectFormatOptions

    @Flag(help: "Print one JSON line of differences per state instead of the table.")
    var json = false

    @OptionGroup var source: FeedEndpointOption
    @OptionGroup var jobs: JobsEndpointOption

    func validate() throws {
        if let limit, !(1...10_000).contains(limit) {
            throw ValidationError("--limit must be between 1 and 10000")
        }
        if let sort { _ = try FetchSortList.parse(sort) }
        if aggregate.isGiven {
            guard section == nil, output.columns == nil else {
                throw ValidationError(
                    "--section and --columns apply to objects; a live aggregate (--group-by, --sum, --avg, --min, "
                        + "--max, --having) prints a column per group key and aggregate")
            }
        } else {
            _ = try output.style(json: json)
        }
    }

    func run() async throws {
        let curve = try jobs.curveKeys()
        let model = try await JobClient.with(endpoint: jobs.endpoint, curve: curve) { try await $0.model() }
        if let request = try aggregate.request(
            entity: selection.entity, predicate: try selection.predicate(), counting: false,
            sortedBy: try sort.map(FetchSortList.parse) ?? [], limit: limit ?? 0)
        {
            _ = try request.compile(in: model)
            try await watch(request, model: model, curve: curve)
            return
        }
        let style = try output.style(json: json)
        var request = FetchRequest(
            entity: selection.entity, predicate: try selection.predicate(),
            sortedBy: try sort.map(FetchSortList.parse) ?? [], limit: limit ?? 20)
        var columns: [ObjectColumn] = []
        if case .table(let list) = style {
            guard let entity = model.entity(named: request.entity) else {
                throw ValidationError("no entity named '\(request.entity)' in the coordinator's model")
            }
            columns = try ObjectColumn.columns(list, entity: entity, model: model)
            request.relationshipKeyPathsForPrefetching = Array(Set(columns.flatMap(\.prefetchPaths))).sorted()
        }
        let view = try await ViewContext.start(
            feed: source.endpoint, jobs: jobs.endpoint, model: model, contents: .fetched, name: "watch", curve: curve)
        let results = try await view.results(for: request, sectionedBy: section)
        let sectioned = section != nil
        let redraw = isatty(1) != 0
        let entity = request.entity
        let table = columns
        _ = try await StopSignals.run {
            for try await snapshot in results {
                if style == .json {
                    Terminal.line(try JSONOutput.liveResults(snapshot, sectioned: sectioned))
                    continue
                }
                var lines = try await view.context.perform { context in
                    let objects = try snapshot.ids.map { try context.object(with: $0) }
                    guard style != .lines else { return objects.map { ObjectText.line(Self.fetched($0)) } }
                    let rows = objects.map { object in table.map { $0.cell(HeldRow(object, in: context)) } }
                    return ObjectTable.lines(columns: table, rows: rows, width: Terminal.width)
                }
                let top = style == .lines ? 0 : 2
                for section in snapshot.sections.reversed() {
                    let line = "-- \(section.name) (\(section.count))"
                    lines.insert(
                        Terminal.width.map { ObjectTable.fit(line, $0) } ?? line, at: top + section.range.lowerBound)
                }
                let header = "\(entity): \(snapshot.ids.count) shown, at seq \(snapshot.seq)"
                Terminal.line((redraw ? "\u{1B}[H\u{1B}[2J" : "") + ([header] + lines).joined(separator: "\n"))
            }
        }
        results.cancel()
        await view.close()
        await MessagingRuntime.shutDown()
    }

    /// Follows a live aggregate until a stop signal, printing each state.
    private func watch(_ request: AggregateRequest, model: Model, curve: CurveClientKeys?) async throws {
        let view = try await ViewContext.start(
            feed: source.endpoint, jobs: jobs.endpoint, model: model, contents: .fetched, name: "watch", curve: curve)
        let results = try await view.results(for: request)
        let redraw = isatty(1) != 0
        let (json, format, entity) = (json, output.format, request.entity)
        _ = try await StopSignals.run {
            for try await snapshot in results {
                if json {
                    Terminal.line(try JSONOutput.liveAggregate(snapshot))
                    continue
                }
                let lines = try AggregateText.lines(snapshot.result, json: false, format: format)
                let header = "\(entity): \(snapshot.rows.count) groups, at seq \(snapshot.seq)"
                Terminal.line((redraw ? "\u{1B}[H\u{1B}[2J" : "") + ([header] + lines).joined(separator: "\n"))
            }
        }
        results.cancel()
        await view.close()
        await MessagingRuntime.shutDown()
    }

    /// An object as `tributary fetch` prints it.
    static func fetched(_ object: ManagedObject) -> FetchedObject {
        var attributes: [String: AttributeValue] = [:]
        for attribute in object.entity.attributes { attributes[attribute.name] = object[attribute.name] }
        var toOne: [String: ObjectID] = [:]
        var toMany: [String: [ObjectID]] = [:]
        for relationship in object.entity.relationships {
            if relationship.isToMany {
                toMany[relationship.name] = (try? object.destinations(relationship.name)) ?? []
            } else if let destination = try? object.destination(relationship.name) {
                toOne[relationship.name] = destination
            }
        }
        return FetchedObject(
            id: object.objectID, version: object.version, entity: object.entity, attributes: attributes, toOne: toOne,
            toMany: toMany)
    }
}
