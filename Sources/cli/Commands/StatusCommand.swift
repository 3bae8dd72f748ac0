import ArgumentParser
import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// `tributary status`: workers, jobs by state, last sequence number.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show workers, jobs by state and the last sequence number.")

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @OptionGroup var jobs: JobsEndpointOption

    func run() async throws {
        let status = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.status()
        }
        if json {
            Terminal.line(try JSONOutput.status(status))
            return
        }
        Terminal.line("store     \(status.storePath)")
        if let reason = status.storeUnwritable {
            Terminal.line(
                "          CANNOT BE WRITTEN for \(Int(status.storeUnwritableSeconds)) s: \(reason); jobs wait, pushes and commands are refused"
            )
        }
        if let cluster = status.cluster {
            let mode = cluster.asynchronous ? "  asynchronous" : ""
            Terminal.line(
                "cluster   \(cluster.cluster)  primary \(cluster.node)  epoch \(cluster.epoch)  record \(cluster.lastRecord)  held writes \(cluster.heldWrites)\(mode)"
            )
            if cluster.writesBlocked {
                Terminal.line("          WRITES BLOCKED: held for want of a standby in sync (strict replication)")
            }
            for standby in cluster.standbys {
                Terminal.line(
                    "standby   \(standby.name)  \(standby.inSync ? "in sync" : "catching up")\(standby.connected ? "" : " (not heard from)")  acknowledged \(standby.acknowledged)  lag \(standby.lagRecords) records"
                )
            }
        }
        Terminal.line("last seq  \(status.lastSeq)  (history from seq \(status.oldestHistorySeq))")
        let counts = JobState.allCases.map { "\($0.rawValue) \(status.jobs[$0])" }
        Terminal.line("jobs      " + counts.joined(separator: "  "))
        for limit in status.limits {
            if let period = limit.periodSeconds {
                Terminal.line("rate      \(limit.name)  at most \(limit.limit) started in any \(period) s")
            } else {
                let per = limit.argument == nil ? "" : " per value (the busiest)"
                Terminal.line("limit     \(limit.name)  \(limit.running) running of \(limit.limit)\(per)")
            }
        }
        for queue in status.queues { Terminal.line("queue     " + QueuesCommand.line(queue)) }
        for process in status.pool {
            let state = process.crashLooping ? "CRASH LOOP" : process.pid == 0 ? "restarting" : "running"
            Terminal.line(
                "pool      \(process.name)  \(state)  pid \(process.pid)  restarts \(process.restarts)  last exit \(process.lastExitStatus)"
            )
        }
        for job in status.running {
            Terminal.line(
                "running   job \(job.id)  \(job.kind)  \(job.done) / \(job.total)  attempts \(JobText.attempts(job))  \(job.worker ?? "")"
            )
        }
        Terminal.line("workers   \(status.workers.count)")
        for worker in status.workers {
            let job = worker.currentJobID.map { "  job \($0)" } ?? ""
            Terminal.line(
                "  \(worker.id)  \(worker.state.rawValue)  \(worker.name)  pid \(worker.pid)  heartbeat \(String(format: "%.1f", worker.secondsSinceHeartbeat))s ago  free \(worker.freeSlots)\(job)"
            )
        }
    }
}
