import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore
import TributaryDemo

/// The `save round trip` figure: one view context saving one small edit at a time (a user's name), each `save()`
/// timed from its call until its answer, the commit made. The view runs in this process; the coordinator is a real
/// process with no workers.
struct SaveRoundTripBenchmark {
    let saves: Int
    let directory: URL

    /// Each save's time, in order, and the saves per second over the run.
    func run() async throws -> (latencies: [Duration], savesPerSecond: Double) {
        let coordinator = try await CoordinatorProcess.startDemoStore(
            in: directory.appendingPathComponent("save-round-trip"), arguments: ["--log-level", "warning"]
        ).process
        do {
            let view = try await ViewContext.start(
                feed: coordinator.feedEndpoint, jobs: coordinator.listenEndpoint, model: DemoData.model,
                entities: ["User"])
            try await view.context.perform { context in try context.insert("User")["login"] = .string("editor") }
            try await view.save()
            var latencies: [Duration] = []
            latencies.reserveCapacity(saves)
            let clock = ContinuousClock()
            let started = clock.now
            for index in 0..<saves {
                try await view.context.perform { context in
                    let user = context.registeredObjects.first { $0["login"] == .string("editor") }
                    user?["name"] = .string("edit \(index)")
                }
                let start = clock.now
                try await view.save()
                latencies.append(clock.now - start)
            }
            let elapsed = clock.now - started
            await view.close()
            await coordinator.stop()
            return (latencies, Double(saves) / max(elapsed.seconds, 1e-9))
        } catch {
            await coordinator.stop()
            throw error
        }
    }
}
