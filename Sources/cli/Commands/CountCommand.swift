import ArgumentParser
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// `tributary count`: how many objects of an entity match a predicate.
struct CountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "count",
        abstract: "Print how many objects of an entity match a predicate (every object without --where).",
        discussion: """
            --where takes the predicate grammar of docs/contexts.md, as `tributary fetch` does; the count comes \
            from one consistent read of the store.
            """)

    @OptionGroup var selection: FetchSelectionOptions

    @OptionGroup var jobs: JobsEndpointOption

    func run() async throws {
        let request = FetchRequest(entity: selection.entity, predicate: try selection.predicate())
        let count = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.count(for: request)
        }
        Terminal.line(String(count))
    }
}
