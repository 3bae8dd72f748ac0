import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// The restart figure: how long a coordinator takes from launch to serving on a store holding 100,000 queued
/// jobs, against the same start on an empty store.
struct RestartBenchmark {
    let jobs: Int
    let directory: URL

    func run() async throws -> (queued: Duration, empty: Duration) {
        let full = directory.appendingPathComponent("restart")
        var started = try await CoordinatorProcess.startDemoStore(in: full, arguments: ["--log-level", "warning"])
        let client = try JobClient(endpoint: started.process.listenEndpoint)
        let spec = JobSpec(kind: NoopJobHandler.kindName)
        var batch = ""
        for start in stride(from: 0, to: jobs, by: 10_000) {
            batch = try await client.push(Array(repeating: spec, count: min(10_000, jobs - start)), batch: batch).batch
        }
        await client.close()
        _ = await started.process.stop()
        let queued = try await timeStart(in: full)
        let empty = try await timeStart(in: directory.appendingPathComponent("restart-empty"))
        started = try await CoordinatorProcess.startDemoStore(in: full, arguments: ["--log-level", "warning"])
        let check = try JobClient(endpoint: started.process.listenEndpoint)
        let status = try await check.status()
        await check.close()
        _ = await started.process.stop()
        guard status.jobs[.queued] == UInt64(jobs) else {
            throw BaselineError("expected \(jobs) queued jobs after the restart, found \(status.jobs[.queued])")
        }
        return (queued, empty)
    }

    /// From launch to the "ready" line, on the store in `directory` (created empty if missing).
    private func timeStart(in directory: URL) async throws -> Duration {
        let clock = ContinuousClock.now
        let started = try await CoordinatorProcess.startDemoStore(in: directory, arguments: ["--log-level", "warning"])
        let elapsed = ContinuousClock.now - clock
        _ = await started.process.stop()
        return elapsed
    }
}
