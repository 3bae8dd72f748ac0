import ArgumentParser
import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore
import TributaryMessaging

/// `view-editor`: the seeds' UI context in a process of its own. It holds a view context that follows the feed,
/// and takes commands on standard input, one per line, answering each on standard output:
///
/// - `show ENTITY KEY=VALUE`: the object the view holds whose KEY is VALUE, as it holds it (no fetch), as
///   `object {json}` (the `tributary fetch --json` form), or `none`.
/// - `edit ENTITY KEY=VALUE NAME=VALUE...`: sets the attributes of that object (fetched when the view does not hold
///   it) and saves the view context into the root: `saved SEQ`, or `error MESSAGE` (a conflict included). A word
///   without `=` continues the value before it: `edit User login=ada name=Ada Lovelace`.
/// - `wait SEQ`: answers `merged SEQ` once the view has merged the commit SEQ (or a later one).
///
/// Values are typed by the model as `tributary update --set` types them. It prints `ready SEQ` once the view holds
/// the entities as of commit SEQ.
@main
struct ViewEditor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "view-editor",
        abstract: "A view context in a process of its own: shows what it holds, edits and saves into the root.")

    @Option(help: ArgumentHelp("The coordinator's jobs/control endpoint.", valueName: "endpoint"))
    var listen = "tcp://127.0.0.1:7400"

    @Option(help: ArgumentHelp("The coordinator's feed endpoint.", valueName: "endpoint"))
    var feed = "tcp://127.0.0.1:7401"

    @Option(help: ArgumentHelp("An entity the view loads and follows (repeat for several).", valueName: "name"))
    var entity: [String] = []

    func run() async throws {
        let model = try await JobClient.with(endpoint: listen) { try await $0.model() }
        let view = try await ViewContext.start(
            feed: feed, jobs: listen, model: model, entities: Set(entity), name: "view-editor")
        let merged = MergedCommits()
        let follower = Task {
            for try await save in view.changes { await merged.reached(save.seq) }
        }
        await merged.reached(view.snapshotSeq)
        Terminal.line("ready \(view.snapshotSeq)")
        for await line in StandardInputLines.lines() {
            let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard let command = words.first else { continue }
            do {
                switch command {
                case "show" where words.count == 3:
                    Terminal.line(try await show(words[1], words[2], in: view))
                case "edit" where words.count >= 4:
                    let receipt = try await edit(words[1], words[2], Self.assignments(words[3...]), in: view)
                    Terminal.line("saved \(receipt.seq)")
                case "wait" where words.count == 2:
                    guard let seq = UInt64(words[1]) else { throw ValidationError("wait takes a sequence number") }
                    await merged.wait(for: seq)
                    Terminal.line("merged \(seq)")
                default:
                    Terminal.line("error unknown command '\(line)' (show, edit or wait)")
                }
            } catch {
                Terminal.line("error \(String(describing: error).replacingOccurrences(of: "\n", with: " "))")
            }
        }
        follower.cancel()
        await view.close()
        await MessagingRuntime.shutDown()
    }

    /// The object the view holds whose `key=value` matches, as JSON.
    private func show(_ entityName: String, _ selector: String, in view: ViewContext) async throws -> String {
        try await view.context.perform { context in
            let entity = try Self.entity(entityName, in: context.model)
            let (key, value) = try Self.assignment(selector, of: entity)
            guard
                let object = context.registeredObjects.first(where: {
                    $0.entity.name == entity.name && $0[key] == value
                })
            else { return "none" }
            var attributes: [String: AttributeValue] = [:]
            for attribute in entity.attributes { attributes[attribute.name] = object[attribute.name] }
            let fetched = FetchedObject(
                id: object.objectID, version: object.version, entity: entity, attributes: attributes, toOne: [:],
                toMany: [:])
            return "object " + (try JSONOutput.object(fetched))
        }
    }

    /// Sets `assignments` on the object `selector` names and saves the view.
    private func edit(_ entityName: String, _ selector: String, _ assignments: [String], in view: ViewContext)
        async throws -> SaveReceipt
    {
        try await view.context.perform { context in
            let entity = try Self.entity(entityName, in: context.model)
            let (key, value) = try Self.assignment(selector, of: entity)
            let request = FetchRequest(
                entity: entity.name, predicate: try FetchPredicate(format: "%K == %@", key, value))
            guard let object = try context.fetch(request).first else {
                throw ValidationError("no \(entity.name) with \(selector)")
            }
            for (name, value) in try BatchValues.parse(assignments, cleared: [], entity: entity) {
                try object.setValue(value, for: name)
            }
        }
        return try await view.save()
    }

    /// `NAME=VALUE` words; a word without `=` continues the value before it (`title=A better title`).
    private static func assignments(_ words: ArraySlice<String>) -> [String] {
        var assignments: [String] = []
        for word in words {
            if word.contains("=") || assignments.isEmpty {
                assignments.append(word)
            } else {
                assignments[assignments.count - 1] += " " + word
            }
        }
        return assignments
    }

    private static func entity(_ name: String, in model: Model) throws -> Entity {
        guard let entity = model.entity(named: name) else { throw ValidationError("the model has no entity '\(name)'") }
        return entity
    }

    /// `key=value`, the value typed by the entity's model.
    private static func assignment(_ text: String, of entity: Entity) throws -> (String, AttributeValue) {
        let values = try BatchValues.parse([text], cleared: [], entity: entity)
        guard let (key, value) = values.first, let value else { throw ValidationError("'\(text)' is not key=value") }
        return (key, value)
    }
}
