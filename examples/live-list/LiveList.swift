import ArgumentParser
import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore
import TributaryMessaging

/// `live-list`: the seeds' UI context end to end. It shows the open pull requests with the most additions, kept
/// current from the feed while imports and other processes change the store (a live result of a view that holds
/// only what it fetched), and edits one when asked: a line `title NUMBER NEW TITLE` on standard input sets that
/// pull request's title through the view context, whose save goes into the root without a job.
@main
struct LiveList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "live-list",
        abstract: "Show the open pull requests with the most additions, live; edit a title with 'title NUMBER TEXT'.")

    @Option(help: ArgumentHelp("The coordinator's jobs/control endpoint.", valueName: "endpoint"))
    var listen = "tcp://127.0.0.1:7400"

    @Option(help: ArgumentHelp("The coordinator's feed endpoint.", valueName: "endpoint"))
    var feed = "tcp://127.0.0.1:7401"

    @Option(help: "How many pull requests to show.")
    var limit = 10

    func run() async throws {
        let model = try await JobClient.with(endpoint: listen) { try await $0.model() }
        let view = try await ViewContext.start(
            feed: feed, jobs: listen, model: model, contents: .fetched, name: "live-list")
        let request = FetchRequest(
            entity: "PullRequest", predicate: try FetchPredicate(format: "merged == NO"),
            sortedBy: [FetchSort("additions", ascending: false), FetchSort("number")], limit: limit)
        let results = try await view.results(for: request)
        let redraw = isatty(1) != 0
        let shower = Task {
            for try await snapshot in results {
                let rows = try await view.context.perform { context in
                    try snapshot.ids.enumerated().map { index, id in
                        let pull = try context.object(with: id)
                        return "\(index + 1). #\(pull["number"].map(String.init(describing:)) ?? "?")  "
                            + "+\(pull["additions"].map(String.init(describing:)) ?? "?")  "
                            + "\(pull["title"].map(String.init(describing:)) ?? "")"
                    }
                }
                let header =
                    "open pull requests by additions, at commit \(snapshot.seq) "
                    + "(+\(snapshot.inserted.count) -\(snapshot.removed.count) ~\(snapshot.moved.count))"
                Terminal.line((redraw ? "\u{1B}[H\u{1B}[2J" : "") + ([header] + rows).joined(separator: "\n"))
            }
        }
        for await line in StandardInputLines.lines() {
            let words = line.split(separator: " ", maxSplits: 2).map(String.init)
            guard words.count == 3, words[0] == "title", let number = Int64(words[1]) else {
                Terminal.error("say: title NUMBER NEW TITLE")
                continue
            }
            do {
                try await view.context.perform { context in
                    let predicate = try FetchPredicate(format: "number == %d", number)
                    guard let pull = try context.fetch(FetchRequest(entity: "PullRequest", predicate: predicate)).first
                    else { throw ValidationError("no pull request #\(number)") }
                    try pull.setValue(.string(words[2]), for: "title")
                }
                let receipt = try await view.save()
                Terminal.error("saved as commit \(receipt.seq)")
            } catch {
                Terminal.error("not saved: \(error)")
            }
        }
        shower.cancel()
        results.cancel()
        await view.close()
        await MessagingRuntime.shutDown()
    }
}
