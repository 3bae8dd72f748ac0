import Foundation
import Logging
import ServiceLifecycle
import TributaryCore

/// Fires schedules' ticks as a `Service`: wakes at the earliest next tick (and at least once a second, to see
/// schedules added or resumed), enqueues the due ticks' jobs through the store's writer, and tells the router. The first
/// firing after the start applies each schedule's missed-tick policy to the ticks that fell due while no
/// coordinator ran. It holds no state of its own: where each schedule stands is in the store.
public struct ScheduleService: Service {
    private let store: RootStore
    private let writer: StoreWriter
    private let logger: Logger
    private let jobsQueued: @Sendable () -> Void

    /// Longest sleep between two looks at the schedules.
    static let longestSleep: Double = 1

    /// - Parameter jobsQueued: told when ticks enqueued jobs, so they go out at once.
    init(store: RootStore, writer: StoreWriter, logger: Logger, jobsQueued: @escaping @Sendable () -> Void) {
        self.store = store
        self.writer = writer
        self.logger = logger
        self.jobsQueued = jobsQueued
    }

    public func run() async throws {
        var catchingUp = true
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            var sleep = Self.longestSleep
            do {
                let now = Date().timeIntervalSince1970
                // Most looks find nothing due: a read says so without queueing a write.
                let next = try await store.jobs.nextScheduleTick()
                let fired =
                    catchingUp || next.map({ $0 <= now }) == true
                    ? try await writer.write(.fireDueSchedules(now: now, catchingUp: catchingUp))
                    : JobStore.FiredTicks(next: next)
                catchingUp = false
                if !fired.jobs.isEmpty { jobsQueued() }
                if fired.skipped > 0 {
                    logger.notice("schedule ticks skipped", metadata: ["ticks": "\(fired.skipped)"])
                }
                if let next = fired.next { sleep = min(sleep, max(0, next - Date().timeIntervalSince1970)) }
            } catch {
                logFailure("cannot fire schedules", error)
            }
            let pause = Duration.seconds(sleep)
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: pause) }
        }
    }
}

extension ScheduleService {
    /// Logs a failed write, unless it failed because the store cannot be written: the router logs that once.
    fileprivate func logFailure(_ message: String, _ error: any Error) {
        guard (error as? StoreError)?.code != .unwritable else { return }
        logger.error("\(message)", metadata: ["error": "\(error)"])
    }
}
