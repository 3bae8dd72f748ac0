import ArgumentParser
import TributaryCommandSupport

/// `tributary demo`: a self-contained run of the whole system.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Import generated pull requests through a local coordinator and worker pool, following the feed.",
        discussion: """
            Starts tributary-coordinator on a temporary store with 2 tributary-worker processes, pushes the rows in
            jobs, follows the change feed with a progress bar, prints a summary and stops everything cleanly.
            With --failover (docs/failover.md): etcd (Debian's etcd-server, installed with apt when missing and run
            as root) and a cluster of 3 coordinators, a primary and 2 synchronous standbys; the primary is SIGKILLed
            halfway through the import, a standby takes over, and the demo checks every row and the subscriber's
            seqs.
            """)

    @Option(help: "Pull requests to import.")
    var rows = 100_000

    @Option(help: "Distinct users among authors and reviewers.")
    var users = 2_000

    @Option(help: "Worker processes.")
    var workers = 2

    @Option(help: "Rows per job.")
    var chunk = 1_000

    @Flag(help: "Leave the coordinator running after the demo, with its dashboard and store, to look around.")
    var keep = false

    @Option(
        help: ArgumentHelp(
            "The coordinator's HTTP endpoint (dashboard, metrics): HOST:PORT, port * picks a free one.",
            valueName: "endpoint"))
    var http = "127.0.0.1:*"

    @Flag(help: "Run the import through a cluster of 3 coordinators and kill its primary halfway (needs etcd).")
    var failover = false

    func validate() throws {
        guard rows > 0, users > 0, chunk > 0 else {
            throw ValidationError("--rows, --users and --chunk must be positive")
        }
        guard (1...64).contains(workers) else { throw ValidationError("--workers must be between 1 and 64") }
        if failover, keep || http != "127.0.0.1:*" || workers != 2 {
            throw ValidationError("--failover runs its own cluster: --keep, --http and --workers do not apply")
        }
    }

    func run() async throws {
        if failover {
            try await EtcdProcess.installIfMissing()
            var demo = FailoverDemo()
            demo.rows = rows
            demo.users = users
            demo.chunk = chunk
            for line in try await demo.run().lines { Terminal.line(line) }
            return
        }
        var demo = DemoRunner()
        demo.rows = rows
        demo.users = users
        demo.workers = workers
        demo.chunk = chunk
        demo.keep = keep
        demo.http = http
        let summary = try await demo.run()
        Terminal.line(summary.line)
    }
}
