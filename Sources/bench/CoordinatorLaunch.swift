import Foundation
import TributaryCommandSupport

/// How a benchmark starts the coordinator it measures: alone (``alone``, every figure but the standby's), or as the
/// primary of a cluster with a synchronous standby on another host (``StandbyCluster``).
struct CoordinatorLaunch: Sendable {
    /// Starts a coordinator on a new demo store in `folder`, with `arguments` added (`--workers 2`, say), and returns
    /// it once it serves.
    let start: @Sendable (_ folder: URL, _ arguments: [String]) async throws -> LaunchedCoordinator

    /// A coordinator alone, on free loopback ports.
    static let alone = CoordinatorLaunch { folder, arguments in
        let started = try await CoordinatorProcess.startDemoStore(in: folder, arguments: arguments)
        let process = started.process
        return LaunchedCoordinator(
            process: process, storePath: started.storePath, logPath: started.logPath, stop: { await process.stop() })
    }
}

/// A coordinator a benchmark started, and what runs beside it.
struct LaunchedCoordinator: Sendable {
    /// The coordinator the benchmark's clients use (the primary, in a cluster).
    let process: CoordinatorProcess
    let storePath: String
    let logPath: String
    /// Stops the coordinator and what was started beside it (a standby), and waits for them.
    let stop: @Sendable () async -> Void
}
