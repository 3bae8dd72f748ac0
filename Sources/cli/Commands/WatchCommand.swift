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

            Text: the rows, one per line as `tributary fetch` prints them, under a header with the commit (and with \
            --section, under a line per section: its value and row count); on a terminal the table is redrawn in \
            place, otherwise each state follows the last.

            --json: one line per state, its difference from the line before: {"seq", "count", "removed": \
            [{"offset", "id"}], "inserted": [{"offset", "id"}], "moved": [{"from", "to", "id"}], "updated": \
            [offsets], "refetched"}, and with --section "sections": [{"name", "count"}] (the rows in order, \
            grouped; a NULL value's name is ""). The first line inserts every row. Removals are at the previous state's \
            offsets and insertions at the new one's (a moved row appears in both), so replaying them gives each \
            state.

            Runs until SIGINT or SIGTERM.
            """)

    @OptionGroup var selection: FetchSelectionOptions

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Sort keys, comma-separated, '-' before a key for descending (ties by id).", valueName: "keys"))
    var sort: String?

    @Option(help: "At most this many rows (1 to 10000).")
    var limit = 20

    @Option(
        help: ArgumentHelp(
            "Group the rows by this key or to-one key path (sorted by it first, ascending, unless --sort starts with it).",
            valueName: "key"))
    var section: String?

    @Flag(help: "Print one JSON line of differences per state instead of the table.")
    var json = false

    @OptionGroup var source: FeedEndpointOption
    @OptionGroup var jobs: JobsEndpointOption

    func validate() throws {
        guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be between 1 and 10000") }
        if let sort { _ = try FetchSortList.parse(sort) }
    }

    func run() async throws {
        let request = FetchRequest(
            entity: selection.entity, predicate: try selection.predicate(),
            sortedBy: try sort.map(FetchSortList.parse) ?? [], limit: limit)
        let curve = try jobs.curveKeys()
        let model = try await JobClient.with(endpoint: jobs.endpoint, curve: curve) { try await $0.model() }
        let view = try await ViewContext.start(
            feed: source.endpoint, jobs: jobs.endpoint, model: model, contents: .fetched, name: "watch", curve: curve)
        let results = try await view.results(for: request, sectionedBy: section)
        let json = json
        let sectioned = section != nil
        let redraw = isatty(1) != 0
        _ = try await StopSignals.run {
            for try await snapshot in results {
                if json {
                    Terminal.line(try JSONOutput.liveResults(snapshot, sectioned: sectioned))
                } else {
                    var lines = try await view.context.perform { context in
                        try snapshot.ids.map { ObjectText.line(try Self.fetched(context.object(with: $0))) }
                    }
                    for section in snapshot.sections.reversed() {
                        lines.insert("-- \(section.name) (\(section.count))", at: section.range.lowerBound)
                    }
                    let header = "\(request.entity): \(snapshot.ids.count) shown, at seq \(snapshot.seq)"
                    Terminal.line((redraw ? "\u{1B}[H\u{1B}[2J" : "") + ([header] + lines).joined(separator: "\n"))
                }
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
