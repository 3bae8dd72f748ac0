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

            --dry-run counts the objects --where selects and prints `N <Entity> object(s) match; nothing was \
            deleted (--dry-run)` (with --json {"entity", "count", "dry_run": true}); it deletes nothing, and \
            cascades are not counted. Without --where every object of the entity is deleted.

            Prints `deleted N <Entity> object(s) in K commit(s) (seq A–B)`: N counts the objects --where selected \
            (not those a cascade deleted), K the commits that changed something, A and B are the sequence numbers \
            of the first and the last of them (other saves may commit in between, so not every seq from A to B is \
            this command's); one commit prints `(seq A)`, and when nothing matched the line ends after \
            `0 commit(s)`. With --json it prints one object instead: {"entity", "count", "commits": [the seq of \
            each commit], "ids": [the objects deleted, in id order, not the cascaded ones]}.
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
