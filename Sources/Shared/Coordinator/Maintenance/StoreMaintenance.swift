import Foundation
import Logging
import ServiceLifecycle
import TributaryCore

/// Upkeep as a `Service`, each kind on its own schedule, written through the store's writer (in order with the
/// commits): attempts that outlived their job's timeout are failed (and the router told, to stop them on their
/// workers), finished jobs past their retention and change history past its retention or count are pruned. It
/// holds no state of the router's and stops at graceful shutdown: nothing it does is owed before a stop.
public struct StoreMaintenance: Service {
    private let writer: StoreWriter
    private let configuration: CoordinatorConfiguration
    private let logger: Logger
    private let attemptsExpired: @Sendable ([JobStore.TimedOutAttempt]) -> Void

    /// How often each kind of pruning runs when it finds little to do.
    static let interval: Duration = .seconds(60)
    /// History commits deleted per transaction; a full chunk means more is due at once.
    static let historyChunk = 2_000
    /// Finished jobs deleted per transaction; a full chunk means more is due at once.
    static let jobChunk = 5_000

    /// How often attempts are checked against their job's timeout.
    static let timeoutInterval: Duration = .milliseconds(500)

    /// - Parameter attemptsExpired: told the attempts failed for outliving their timeout, to stop them.
    init(
        writer: StoreWriter, configuration: CoordinatorConfiguration, logger: Logger,
        attemptsExpired: @escaping @Sendable ([JobStore.TimedOutAttempt]) -> Void
    ) {
        self.writer = writer
        self.configuration = configuration
        self.logger = logger
        self.attemptsExpired = attemptsExpired
    }

    public func run() async throws {
        await withDiscardingTaskGroup { schedules in
            schedules.addTask {
                await repeatUntilStopped(every: Self.timeoutInterval) { await expireTimedOutAttempts() }
            }
            if configuration.historyRetention != nil || configuration.historyMaximumCommits != nil {
                schedules.addTask { await repeatUntilStopped(every: Self.interval) { await pruneHistory() } }
            }
            schedules.addTask { await repeatUntilStopped(every: Self.interval) { await pruneContextSaves() } }
            if let retention = configuration.finishedJobRetention {
                schedules.addTask {
                    await repeatUntilStopped(every: Self.interval) { await pruneFinishedJobs(olderThan: retention) }
                }
            }
        }
    }

    /// Runs `step` now and again `interval` after each run, or at once when it says more is due, until
    /// graceful shutdown or cancellation.
    private func repeatUntilStopped(every interval: Duration, _ step: @escaping @Sendable () async -> Bool) async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            if await step() { continue }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }

    /// Fails attempts that outlived their job's timeout (retried or dead, per the job's policy).
    /// - Returns: false: the next check is due after the interval.
    private func expireTimedOutAttempts() async -> Bool {
        do {
            let expired = try await writer.write(.failTimedOutAttempts())
            for attempt in expired {
                logger.notice(
                    "job attempt timed out",
                    metadata: ["job": "\(attempt.jobID)", "outcome": "\(attempt.failure.outcome)"])
            }
            if !expired.isEmpty { attemptsExpired(expired) }
        } catch {
            logFailure("cannot expire timed-out attempts", error)
        }
        return false
    }

    /// Deletes one chunk of history past its retention or count.
    /// - Returns: whether the chunk was full (more is due).
    private func pruneHistory() async -> Bool {
        do {
            let pruned = try await writer.write(
                .pruneHistory(
                    before: configuration.historyRetention.map { Date() - $0.seconds },
                    keepingNewest: configuration.historyMaximumCommits, limit: Self.historyChunk))
            if pruned > 0 { logger.debug("history pruned", metadata: ["commits": "\(pruned)"]) }
            return pruned == Self.historyChunk
        } catch {
            logFailure("cannot prune history", error)
            return false
        }
    }

    /// Forgets one chunk of the contexts' save ids older than ``ContextSaveLog/retention``.
    /// - Returns: whether the chunk was full (more is due).
    private func pruneContextSaves() async -> Bool {
        do {
            let pruned = try await writer.write(
                .pruneContextSaves(
                    before: Date() - ContextSaveLog.retention.seconds, limit: ContextSaveLog.pruneChunk))
            if pruned > 0 { logger.debug("context save ids pruned", metadata: ["saves": "\(pruned)"]) }
            return pruned == ContextSaveLog.pruneChunk
        } catch {
            logFailure("cannot prune context save ids", error)
            return false
        }
    }

    /// Deletes one chunk of the finished jobs (and their payloads) finished longer than `retention` ago.
    /// - Returns: whether the chunk was full (more is due).
    private func pruneFinishedJobs(olderThan retention: Duration) async -> Bool {
        do {
            let pruned = try await writer.write(
                .pruneFinishedJobs(before: Date() - retention.seconds, limit: Self.jobChunk))
            if pruned > 0 { logger.info("finished jobs pruned", metadata: ["jobs": "\(pruned)"]) }
            return pruned == Self.jobChunk
        } catch {
            logFailure("cannot prune finished jobs", error)
            return false
        }
    }
}

extension StoreMaintenance {
    /// Logs a failed write, unless it failed because the store cannot be written: the router logs that once.
    fileprivate func logFailure(_ message: String, _ error: any Error) {
        guard (error as? StoreError)?.code != .unwritable else { return }
        logger.error("\(message)", metadata: ["error": "\(error)"])
    }
}
