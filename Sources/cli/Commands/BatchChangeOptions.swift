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
            as true/false, dates as ISO 8601 (2024-05-01T12:00:00Z), uuids and to-one relationships as a uuid, \
            data as base64. --clear key sets an optional attribute or a to-one relationship to null. To-many \
            relationships cannot be set.

            Prints `updated N <Entity> object(s) in K commit(s) (seq …)`, or with --json one object with the ids.
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

/// `tributary delete`: Core Data's batch delete, run in the coordinator's writer.
struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete every object of an entity that matches a predicate, in the coordinator's writer.",
        discussion: """
            The coordinator selects the objects inside its commit and deletes them there (Core Data's \
            NSBatchDeleteRequest), applying each relationship's delete rule: nullify clears references to them, \
            cascade deletes what they point to in the same commit, deny refuses the commit while the relationship \
            points to anything (nothing of that commit changes). Each commit takes up to --per-commit objects; \
            one didSave per commit lists every object it deleted, cascades included. When a commit fails, those \
            before it stay.

            --dry-run prints how many objects match and deletes nothing (cascades are not counted). Without \
            --where every object of the entity is deleted.

            Prints `deleted N <Entity> object(s) in K commit(s) (seq …)`, or with --json one object with the ids.
            """)

    @OptionGroup var options: BatchChangeOptions

    func run() async throws {
        let options = options
        try await options.run(verb: "deleted") { client, _ in
            try await client.execute(
                BatchDelete(
                    entity: options.selection.entity, predicate: try options.selection.predicate(),
                    objectsPerCommit: options.perCommit))
        }
    }
}
