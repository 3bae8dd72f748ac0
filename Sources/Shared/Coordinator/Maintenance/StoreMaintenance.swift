import Foundation
import Logging
import ServiceLifecycle
import TributaryCore

/// Pruning as a `Service`: finished jobs past their retention and change history past its retention or count,
/// each on its own schedule, straight against the store (the writer serialises them with the commits). It
/// holds no state of the server's and stops at graceful shutdown: nothing it does is owed before a stop.
public struct StoreMaintenance: Service {
    private let store: RootStore
    private let configuration: CoordinatorConfiguration
    private let logger: Logger

    /// How often each kind of pruning runs when it finds little to do.
    static let interval: Duration = .seconds(60)
    /// History commits deleted per transaction; a full chunk means more is due at once.
    static let historyChunk = 2_000

    public init(store: RootStore, configuration: CoordinatorConfiguration, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
    }

    public func run() async throws {
        await withDiscardingTaskGroup { schedules in
            if configuration.historyRetention != nil || configuration.historyMaximumCommits != nil {
                schedules.addTask { await repeatUntilStopped { await pruneHistory() } }
            }
            if let retention = configuration.finishedJobRetention {
                schedules.addTask { await repeatUntilStopped { await pruneFinishedJobs(olderThan: retention) } }
            }
        }
    }

    /// Runs `step` now and again ``interval`` after each run, or at once when it says more is due, until
    /// graceful shutdown or cancellation.
    private func repeatUntilStopped(_ step: @escaping @Sendable () async -> Bool) async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            if await step() { continue }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: Self.interval) }
        }
    }

    /// Deletes one chunk of history past its retention or count.
    /// - Returns: whether the chunk was full (more is due).
    private func pruneHistory() async -> Bool {
        do {
            let pruned = try await store.pruneHistory(
                before: configuration.historyRetention.map { Date() - $0.seconds },
                keepingNewest: configuration.historyMaximumCommits, limit: Self.historyChunk)
            if pruned > 0 { logger.debug("history pruned", metadata: ["commits": "\(pruned)"]) }
            return pruned == Self.historyChunk
        } catch {
            logger.error("cannot prune history", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// Deletes finished jobs (and their payloads) finished longer than `retention` ago.
    /// - Returns: false: one run a minute is enough.
    private func pruneFinishedJobs(olderThan retention: Duration) async -> Bool {
        do {
            let pruned = try await store.pruneFinishedJobs(before: Date() - retention.seconds)
            if pruned > 0 { logger.info("finished jobs pruned", metadata: ["jobs": "\(pruned)"]) }
        } catch {
            logger.error("cannot prune finished jobs", metadata: ["error": "\(error)"])
        }
        return false
    }
}
