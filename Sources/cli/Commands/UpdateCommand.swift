import ArgumentParser
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// `tributary update`: Core Data's batch update, run in the coordinator's writer.
struct UpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Set values on every object of an entity that matches a predicate, in the coordinator's writer.",
        discussion: """
            The coordinator selects the objects inside its commit and updates them there, without sending them \
            anywhere first (Core Data's NSBatchUpdateRequest). Each commit is atomic and takes up to --per-commit \
            objects, the first by id after the previous commit's; one didSave per commit lists every object it \
            changed, so views and subscribers follow. When a commit fails, those before it stay; running the \
            command again goes on with what --where still selects.

            --set key=value is typed by the store's model: strings as written, ints and doubles as numbers, bools \
            as true/false (or 1/0), dates as ISO 8601 (2024-05-01T12:00:00Z), uuids and to-one relationships as a \
            uuid, data as base64. --clear key sets an optional attribute or a to-one relationship to null. To-many \
            relationships cannot be set.

            Prints `updated N <Entity> object(s) in K commit(s) (seq A–B)`: K counts the commits that changed \
            something, A and B are the sequence numbers of the first and the last of them (other saves may commit \
            in between, so not every seq from A to B is this command's); one commit prints `(seq A)`, and when \
            nothing matched the line ends after `0 commit(s)`. With --json it prints one object instead: \
            {"entity", "count", "commits": [the seq of each commit], "ids": [the objects updated, in id order]}.

            --dry-run counts the objects --where selects and prints `N <Entity> object(s) match; nothing was \
            updated (--dry-run)` (with --json {"entity", "count", "dry_run": true}); it updates nothing and does \
            not check the --set and --clear values (only that one is given): a key the entity lacks or a value of \
            the wrong type is found only by a run without --dry-run. That run checks every value against the \
            store's model before its first commit, so a bad one changes nothing.
            """)

    @OptionGroup var options: BatchChangeOptions

    @Option(help: ArgumentHelp("A value to set, key=value (repeat for several).", valueName: "key=value"))
    var set: [String] = []

    @Option(
        help: ArgumentHelp("An attribute or to-one relationship to set to null (repeat for several).", valueName: "key")
    )
    var clear: [String] = []

    func validate() throws {
        guard !set.isEmpty || !clear.isEmpty else {
            throw ValidationError("give at least one --set key=value or --clear key")
        }
    }

    func run() async throws {
        let (set, clear, options) = (set, clear, options)
        try await options.run(verb: "updated") { client, model in
            guard let entity = model.entity(named: options.selection.entity) else {
                throw ValidationError("the store's model has no entity '\(options.selection.entity)'")
            }
            let values = try BatchValues.parse(set, cleared: clear, entity: entity)
            return try await client.execute(
                BatchUpdate(
                    entity: entity.name, predicate: try options.selection.predicate(), set: values,
                    objectsPerCommit: options.perCommit))
        }
    }
}
