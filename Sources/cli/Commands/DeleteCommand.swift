import ArgumentParser
import TributaryClient
import TributaryCommandSupport
import TributaryCore

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
