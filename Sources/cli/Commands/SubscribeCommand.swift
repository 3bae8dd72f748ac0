import ArgumentParser
import Foundation
import Tributary
import TributaryCommandSupport

/// `tributary subscribe`: print the change feed.
struct SubscribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Print one line per didSave event of the change feed.",
        discussion: """
            Prints "subscribed (last seq N)" on standard error once the subscription is live.
            JSON lines: {"seq": N, "inserted": [{"entity": "...", "id": "..."}], "updated": [...], "deleted": [...]}
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case json, text
    }

    @Option(help: "Only events of this entity (repeat for several).")
    var entity: [String] = []

    @Option(help: "Output format: json or text.")
    var format: Format = .text

    @Option(help: "Exit after this many events (default: follow for ever).")
    var count: Int?

    @OptionGroup var source: FeedEndpointOption

    func validate() throws {
        if let count, count <= 0 { throw ValidationError("--count must be positive") }
    }

    func run() async throws {
        let feed = try ChangeFeed(endpoint: source.endpoint, entities: Set(entity))
        var seen = 0
        for await event in feed {
            switch event {
            case .connected(let lastSeq):
                Terminal.error("subscribed to \(source.endpoint) (last seq \(lastSeq))")
            case .didSave(let save):
                Terminal.line(format == .json ? save.jsonLine : save.textLine)
                seen += 1
                if let count, seen >= count {
                    await feed.close()
                    return
                }
            }
        }
    }
}
