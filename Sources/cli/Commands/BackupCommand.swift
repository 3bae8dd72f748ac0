import ArgumentParser
import Foundation
import TributaryClient
import TributaryCommandSupport

/// `tributary backup --to FILE`: an online backup of the store, written by the coordinator on its host.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Have the coordinator write a consistent copy of its store while it serves (online backup).",
        discussion: """
            The coordinator copies its store as of one commit (SQLite's VACUUM INTO on a read transaction: commits \
            go on meanwhile) to FILE on its own host: FILE is relative to its backup directory (--backup-dir of \
            tributary-coordinator, by default the store's directory), or absolute inside it. An existing file is \
            never replaced, and FILE appears only once complete. Prints the path, its size, the last commit it \
            holds (seq) and how long it took. A coordinator started on the copy (--store FILE) resumes from that \
            commit: jobs that were running go back to the queue. See docs/operations.md.
            """)

    @Option(help: ArgumentHelp("The backup file on the coordinator's host.", valueName: "file"))
    var to: String

    @Option(help: "Seconds to wait for the copy to finish.")
    var timeout: Int = 600

    @OptionGroup var jobs: JobsEndpointOption

    func validate() throws {
        guard !to.isEmpty else { throw ValidationError("--to must name a file") }
        guard timeout > 0 else { throw ValidationError("--timeout must be at least 1 second") }
    }

    func run() async throws {
        let backup = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.backup(to: to, timeout: .seconds(timeout))
        }
        Terminal.line(
            "\(backup.path)  \(backup.bytes) bytes  seq \(backup.lastSeq)  \(String(format: "%.2f", backup.seconds)) s")
    }
}
